# Copyright: gateann authors.
#
# gateann is a trusted extension: the owner of a database creates it there
# without being a superuser, builds and queries an index (and so is
# gateann_vector, where pgvector is installed),
# and the functions that look into an index still ask for their privileges
# (README, Functions) of every other role.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $node = gateann_node('trusted', preload => 1);
$node->safe_psql('postgres', q{
CREATE ROLE app LOGIN;
CREATE ROLE other LOGIN;
CREATE DATABASE appdb OWNER app;
});
my $as_app = $node->connstr('appdb') . ' user=app';
my $as_other = $node->connstr('appdb') . ' user=other';

# SQL run as a role (a connection string of its own)
sub sql_as
{
	my ($connstr, $sql) = @_;
	return $node->safe_psql('appdb', $sql, connstr => $connstr);
}

sub try_as
{
	my ($connstr, $sql) = @_;
	return $node->psql('appdb', $sql, connstr => $connstr);
}

is(sql_as($as_app, q{SELECT rolsuper FROM pg_roles WHERE rolname = current_user}),
	'f', 'app is not a superuser');
sql_as($as_app, qq{
CREATE EXTENSION gateann;
SELECT setseed(0.5);
CREATE TABLE items (id int, tenant int, v real[]);
@{[ random_vectors_sql('items (id, v)', 3000, 16) ]}
UPDATE items SET tenant = id % 10;
CREATE INDEX items_idx ON items USING gateann (v, tenant);
});
is(sql_as($as_app, q{SELECT extowner::regrole FROM pg_extension WHERE extname = 'gateann'}),
	'app', 'the database owner created the extension and owns it');

my $query = q{SET enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM items WHERE tenant = 3
  ORDER BY v <-> (SELECT v FROM items WHERE id = 13) LIMIT 10) t};
is(sql_as($as_app, $query), '10', 'the owner queries the index');
like(sql_as($as_app, 'SET enable_seqscan = off; EXPLAIN (COSTS OFF) ' .
	q{SELECT id FROM items WHERE tenant = 3 ORDER BY v <-> (SELECT v FROM items WHERE id = 13) LIMIT 10}),
	qr/Index Scan using items_idx/, 'through the gateann index');
cmp_ok(sql_as($as_app, q{SELECT gateann_prewarm('items_idx')}), '>', 0,
	'the owner loads the stores');
is(sql_as($as_app, q{SELECT count(*) FROM gateann_verify('items_idx')}),
	'0', 'the owner verifies the index');

# another role with SELECT: queries, but neither loads nor verifies
sql_as($as_app, q{GRANT SELECT ON items TO other});
is(sql_as($as_other, $query), '10', 'a role with SELECT queries the index');
my ($rc, $out, $err) = try_as($as_other, q{SELECT gateann_prewarm('items_idx')});
isnt($rc, 0, 'a role that does not own the table cannot load the stores');
like($err, qr/permission denied|must be owner/, '... with a permission error') or diag($err);
($rc, $out, $err) = try_as($as_other, q{SELECT count(*) FROM gateann_verify('items_idx')});
isnt($rc, 0, 'nor verify the index');
like($err, qr/permission denied|must be owner/, '... with a permission error') or diag($err);

# and a role without CREATE on the database cannot create the extension
$node->safe_psql('postgres', 'CREATE DATABASE otherdb');
($rc, $out, $err) = $node->psql('otherdb', q{CREATE EXTENSION gateann},
	connstr => $node->connstr('otherdb') . ' user=other');
isnt($rc, 0, 'a role without CREATE on the database cannot create it');
like($err, qr/permission denied/, '... with a permission error') or diag($err);

# gateann_vector is trusted too: with pgvector's vector created by a superuser
# (pgvector is not trusted), the owner adds the operator classes, halfvec's
# among them (created by a DO block in the install script), and uses them
SKIP:
{
	my ($vrc) = $node->psql('appdb', 'CREATE EXTENSION vector');
	skip 'pgvector not installed (or not loadable) for this server', 3 if $vrc != 0;
	sql_as($as_app, q{
CREATE EXTENSION gateann_vector CASCADE;
CREATE TABLE h (id int, e halfvec(3));
INSERT INTO h SELECT i, ARRAY[i, i + 1, i + 2]::real[]::halfvec FROM generate_series(1, 300) i;
CREATE INDEX h_idx ON h USING gateann (e);
});
	is(sql_as($as_app, q{SELECT extowner::regrole FROM pg_extension WHERE extname = 'gateann_vector'}),
		'app', 'the owner created gateann_vector');
	is(sql_as($as_app, q{SELECT string_agg(opcname, ',' ORDER BY opcname) FROM pg_opclass
		WHERE opcmethod = (SELECT oid FROM pg_am WHERE amname = 'gateann') AND opcname LIKE 'halfvec%'}),
		'halfvec_cosine_ops,halfvec_ip_ops,halfvec_l2_ops', 'with the halfvec classes');
	is(sql_as($as_app, q{SET enable_seqscan = off;
SELECT id FROM h ORDER BY e <-> '[5,6,7]' LIMIT 1}), '5', 'a halfvec index answers its owner');
	sql_as($as_app, 'DROP TABLE h; DROP EXTENSION gateann_vector');
}

sql_as($as_app, 'DROP EXTENSION gateann CASCADE');
is(sql_as($as_app, q{SELECT count(*) FROM pg_class WHERE relname = 'items_idx'}),
	'0', 'the owner drops it, its indexes with it');
$node->stop;
done_testing();
