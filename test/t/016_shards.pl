# Copyright: gateann authors.
#
# Scale-out through postgres_fdw: a coordinator whose table is partitioned
# over three shard servers (foreign tables), each shard with a gateann index.
#  - The natural query on the parent returns the top k of the union of the
#    shards (within single-node recall); the filter and ORDER BY reach every
#    shard (Remote SQL), so each uses its gateann index.
#  - LIMIT does not reach the shards through the natural query's Merge
#    Append (each sends its rows in distance order until the coordinator has
#    k), and rows come back with their vectors (README, "Several servers");
#    one branch per partition with its own LIMIT under UNION ALL gets the
#    LIMIT to every shard and reads them concurrently (async Append).
#  - A shard plans postgres_fdw's unfiltered cursor as a seq scan and a sort
#    at cursor_tuple_fraction 0.1, as its gateann index at 0.001: the
#    servers' options that make the natural query cheap.
#  - Inserts through the parent reach the shards' indexes.
#  - gateann's settings reach a shard's sessions through the server's
#    libpq options ('-c gateann.search_list_size=...').
#  - A shard that is down fails the query with an error naming it (no
#    partial answer), and the query works again once it is back.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $coord = PostgreSQL::Test::Cluster->new('coordinator');
$coord->init;
$coord->start;
if (!$coord->safe_psql('postgres',
	q{SELECT count(*) FROM pg_available_extensions WHERE name = 'postgres_fdw'}))
{
	plan skip_all => 'postgres_fdw is not installed for this server';
}

my $dims = 16;
my @shards = map { gateann_node("shard$_", preload => 1) } 1 .. 3;

# each shard: its part of the rows (id % 3 = shard - 1) and a gateann index
for my $i (0 .. 2)
{
	$shards[$i]->safe_psql('postgres', qq{
SELECT setseed(0.$i + 0.1);
CREATE TABLE items (id int, label int, v real[]);
INSERT INTO items SELECT i, i % 10,
  (SELECT array_agg(random()::real) FROM generate_series(1, $dims) WHERE i > 0)
  FROM generate_series(1, 9000) i WHERE i % 3 = $i;
CREATE INDEX items_idx ON items USING gateann (v, label);
ANALYZE items;});
}

$coord->safe_psql('postgres', q{
CREATE EXTENSION postgres_fdw;
CREATE EXTENSION gateann;
CREATE TABLE items (id int, label int, v real[]) PARTITION BY LIST ((id % 3));});
for my $i (0 .. 2)
{
	my $port = $shards[$i]->port;
	my $host = $shards[$i]->host;
	my $n = $i + 1;
	$coord->safe_psql('postgres', qq{
CREATE SERVER shard$n FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '$host', port '$port', dbname 'postgres', extensions 'gateann',
           async_capable 'true', fetch_size '100');
CREATE USER MAPPING FOR CURRENT_USER SERVER shard$n;
CREATE FOREIGN TABLE items_$n PARTITION OF items FOR VALUES IN ($i)
  SERVER shard$n OPTIONS (table_name 'items');});
}

my $q = $coord->safe_psql('postgres',
	"SELECT '{' || string_agg((0.5 + 0.1 * sin(j))::real::text, ',') || '}' FROM generate_series(1, $dims) j");

# the exact top 10 (label = 3) of the union: each shard's exact top 10, merged
my %exact_d;
for my $s (@shards)
{
	for my $row (split /\n/, $s->safe_psql('postgres', qq{
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT id, v <-> '$q'::real[] FROM items WHERE label = 3 ORDER BY 2 LIMIT 10;}))
	{
		my ($id, $d) = split /\|/, $row;
		$exact_d{$id} = $d;
	}
}
my @exact = (sort { $exact_d{$a} <=> $exact_d{$b} } keys %exact_d)[0 .. 9];

sub overlap
{
	my ($got) = @_;
	my %want = map { $_ => 1 } @exact;
	return scalar grep { $want{$_} } split /\n/, $got;
}

# --- the natural query on the parent ------------------------------------------------------------
my $natural = "SELECT id FROM items WHERE label = 3 ORDER BY v <-> '$q'::real[] LIMIT 10";
my $got = $coord->safe_psql('postgres', $natural);
cmp_ok(overlap($got), '>=', 9, 'the parent returns the top 10 of the union of the shards');
my $plan = $coord->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) $natural");
# (postgres_fdw prints an extension's operator as OPERATOR(schema.op))
my $op = qr/(?:<->|OPERATOR\(public\.<->\))/;
like($plan, qr/Remote SQL: .*WHERE \(\(label = 3\)\) ORDER BY \(v $op /,
	'the filter and the ordering reach the shards');
unlike($plan, qr/Remote SQL: .*LIMIT/, 'LIMIT does not reach them through a Merge Append');

# --- the forms README's "Several servers" gives -------------------------------------------------
# (postgres_fdw plans a foreign table it has no statistics for as a few rows and
# sorts them all on the coordinator; ANALYZE samples the shards)
$coord->safe_psql('postgres', 'ANALYZE items');

# one branch per partition, each with its LIMIT, under an Append (ORDER BY d + 0:
# not a Merge Append, which reads its branches one after another)
my $union = join(' UNION ALL ', map {
	"(SELECT id, v <-> '$q'::real[] AS d FROM items_$_ WHERE label = 3 ORDER BY v <-> '$q'::real[] LIMIT 10)"
} 1 .. 3);
$union = "SELECT id FROM ($union) u ORDER BY d + 0 LIMIT 10";
cmp_ok(overlap($coord->safe_psql('postgres', $union)), '>=', 9,
	'one LIMIT per shard, merged on the coordinator: the top 10 of the union');
$plan = $coord->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) $union");
my @remote = $plan =~ /Remote SQL: (.*)/g;
is(scalar(grep { /WHERE \(\(label = 3\)\) ORDER BY \(v $op .* LIMIT 10/ } @remote), 3,
	'each shard gets the filter, the ordering and the LIMIT');
is(scalar(() = $plan =~ /Async Foreign Scan/g), 3, 'and the shards are read concurrently');
# unfiltered too: the distance of a foreign table's row keeps a function's
# default price (vector.c), else postgres_fdw prices the LIMIT sent to a shard
# above the one kept here
(my $unfiltered = $union) =~ s/ WHERE label = 3//g;
$plan = $coord->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) $unfiltered");
is(scalar(grep { /FROM public\.items ORDER BY \(v $op .* LIMIT 10/ } ($plan =~ /Remote SQL: (.*)/g)), 3,
	'unfiltered, each shard gets the ordering and the LIMIT');

# The natural query through a cursor per shard: planned by the shard for
# cursor_tuple_fraction of the rows, which unfiltered is a seq scan and a sort
# of the whole shard; the servers' options make it the index, fetch_size = k
# keeps each fetch to k rows.
my $cursor = "EXPLAIN DECLARE c CURSOR FOR SELECT id, v FROM items ORDER BY v <-> '$q'::real[]";
like($shards[0]->safe_psql('postgres', "BEGIN; $cursor; COMMIT;"), qr/Seq Scan/,
	"a shard plans postgres_fdw's unfiltered cursor as a seq scan at cursor_tuple_fraction 0.1");
like($shards[0]->safe_psql('postgres', "BEGIN; SET LOCAL cursor_tuple_fraction = 0.001; $cursor; COMMIT;"),
	qr/Index Scan using items_idx/, 'and as its gateann index at 0.001');
my $natural_all = "SELECT id FROM items ORDER BY v <-> '$q'::real[] LIMIT 10";
my $exact_all = join("\n", split /\n/, $coord->safe_psql('postgres', qq{
SET enable_indexscan = off; SELECT id FROM items ORDER BY v <-> '$q'::real[] LIMIT 10;}));
for my $n (1 .. 3)
{
	$coord->safe_psql('postgres', qq{ALTER SERVER shard$n OPTIONS (SET fetch_size '10',
  ADD options '-c cursor_tuple_fraction=0.001')});
}
$coord->safe_psql('postgres', q{SELECT postgres_fdw_disconnect_all()});
my %exact_set = map { $_ => 1 } split /\n/, $exact_all;
cmp_ok(scalar(grep { $exact_set{$_} } split /\n/, $coord->safe_psql('postgres', $natural_all)), '>=', 9,
	'with fetch_size and cursor_tuple_fraction on the servers the unfiltered natural query is right');
for my $n (1 .. 3)
{
	$coord->safe_psql('postgres', qq{ALTER SERVER shard$n OPTIONS (SET fetch_size '100', DROP options)});
}
$coord->safe_psql('postgres', q{SELECT postgres_fdw_disconnect_all()});

# A prepared statement's generic plan: postgres_fdw sends the shards a parameter
# as it is, never a cast of one.  The vector bound as double precision[] (what a
# client sends for a list of floats) and cast to real[] leaves the ordering on
# the coordinator, which then fetches every row of every shard; used as it is
# (gateann's operators take double precision[]) the shards order their rows.
my ($cast_plan, $plain_plan) = split /MARK/, $coord->safe_psql('postgres', qq{
SET plan_cache_mode = force_generic_plan;
PREPARE cast_q(double precision[]) AS SELECT id FROM items ORDER BY v <-> \$1::real[] LIMIT 10;
PREPARE plain_q(double precision[]) AS SELECT id FROM items ORDER BY v <-> \$1 LIMIT 10;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE cast_q('$q');
SELECT 'MARK';
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE plain_q('$q');});
unlike($cast_plan, qr/Remote SQL: .*ORDER BY/,
	'a generic plan with a cast parameter does not send the ordering');
is(scalar(() = $plain_plan =~ /Remote SQL: .*ORDER BY \(v $op \$1::double precision\[\]\)/g), 3,
	'one without the cast sends it to every shard');

# --- writes through the parent ------------------------------------------------------------------
my $before = $got;
$coord->safe_psql('postgres', qq{
INSERT INTO items SELECT 100000 + i, 3, '$q'::real[] FROM generate_series(0, 5) i;});
$got = $coord->safe_psql('postgres', $natural);
is(join(',', sort { $a <=> $b } (split /\n/, $got)[0 .. 5]), '100000,100001,100002,100003,100004,100005',
	'rows inserted through the parent are found first, from every shard');
is($shards[1]->safe_psql('postgres', qq{
SET enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM items WHERE label = 3 ORDER BY v <-> '$q'::real[] LIMIT 2) t
WHERE id >= 100000}), '2', "a shard's own index holds the rows routed to it");
$coord->safe_psql('postgres', q{DELETE FROM items WHERE id >= 100000});
is(overlap($coord->safe_psql('postgres', $natural)), overlap($before),
	'deletes through the parent take them out again');

# --- settings reach the shards through the server's libpq options -------------------------------
# (a view on each shard shows the setting of the session postgres_fdw opened)
for my $s (@shards)
{
	$s->safe_psql('postgres', q{CREATE VIEW gateann_settings AS
  SELECT current_setting('gateann.search_list_size') AS search_list_size,
         current_setting('gateann.filter_mode') AS filter_mode});
}
$coord->safe_psql('postgres', q{
CREATE FOREIGN TABLE shard2_settings (search_list_size text, filter_mode text)
  SERVER shard2 OPTIONS (table_name 'gateann_settings');
ALTER SERVER shard2 OPTIONS (ADD options '-c gateann.search_list_size=37 -c gateann.filter_mode=post');});
# (a server's options reach only sessions opened after the change)
$coord->safe_psql('postgres', q{SELECT postgres_fdw_disconnect_all()});
is($coord->safe_psql('postgres', q{SELECT search_list_size || ' ' || filter_mode FROM shard2_settings}),
	'37 post', "a server's options '-c ...' set gateann's settings in the shard's sessions");
cmp_ok(overlap($coord->safe_psql('postgres', $natural)), '>=', 9,
	'the query on the parent runs with them');
$coord->safe_psql('postgres', q{ALTER SERVER shard2 OPTIONS (DROP options);
SELECT postgres_fdw_disconnect_all();});

# --- a shard down -------------------------------------------------------------------------------
$shards[1]->stop;
my ($rc, $out, $err) = $coord->psql('postgres', $natural);
isnt($rc, 0, 'a query over a stopped shard fails');
like($err, qr/shard2/, 'and the error names the shard');
$shards[1]->start;
cmp_ok(overlap($coord->safe_psql('postgres', $natural)), '>=', 9,
	'the query works again once the shard is back');

$_->stop for @shards;
$coord->stop;
done_testing();
