# Copyright: gateann authors.
#
# Indexes that grow from no rows: the first insert sets the index up, later inserts retrain the
# quantizer and re-encode every node (retrain.c).  A crash (immediate stop) in the middle of a
# stream of inserts that crosses retraining points; a standby, replaying with
# wal_consistency_checking, whose stores were loaded before the retraining; and an unlogged
# table, whose index a crash resets to the empty one of its init fork.  After each step
# gateann_verify must be clean and every committed row must be found by a search for its own
# vector.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;
use IPC::Run;

my $dims = 16;

my $primary = gateann_node('primary', preload => 1, streaming => 1, conf => 'autovacuum = off');
my $standby = gateann_standby($primary, 'standby', preload => 1);

$primary->safe_psql('postgres', qq{
CREATE FUNCTION vec(i int) RETURNS real[] LANGUAGE sql VOLATILE
  AS \$\$ SELECT array_agg((i % 20) * 2 + random()::real) FROM generate_series(1, $dims) \$\$;
CREATE TABLE g (id int PRIMARY KEY, v real[], lab int);
CREATE INDEX g_idx ON g USING gateann (v, lab) WITH (max_neighbors = 16);
CREATE UNLOGGED TABLE u (id int PRIMARY KEY, v real[]);
CREATE INDEX u_idx ON u USING gateann (v);
});

sub check_all_found
{
	my ($node, $table, $what) = @_;
	my $res = $node->safe_psql('postgres', qq{
SET enable_seqscan = off; SET gateann.search_list_size = 100;
SELECT count(*) FILTER (WHERE (SELECT o.id FROM $table o ORDER BY o.v <-> i.v LIMIT 1) = i.id)
       || '/' || count(*) FROM $table i});
	my ($found, $total) = split m{/}, $res;
	ok($total > 0 && $found == $total, "$what: every row finds itself ($res)");
}

sub check_verify
{
	my ($node, $index, $what) = @_;
	is($node->safe_psql('postgres', qq{SELECT string_agg(p, E'\\n') FROM gateann_verify('$index') p}),
		'', "$what: gateann_verify clean");
}

sub training_rows
{
	my ($node, $index) = @_;
	return $node->safe_psql('postgres',
		qq{SELECT pq_training_rows FROM gateann_index_info('$index')});
}

# --- 1. the first rows; the standby loads its stores now -----------------------------------------
$primary->safe_psql('postgres', 'INSERT INTO g SELECT i, vec(i), i % 10 FROM generate_series(1, 100) i');
is(training_rows($primary, 'g_idx'), '64', 'set up by the first row, retrained at 64 rows');
$primary->wait_for_catchup($standby);
$standby->safe_psql('postgres', q{SELECT gateann_prewarm('g_idx')});

# --- 2. crash in the middle of a stream of single-row inserts crossing retraining points ----------
my $script = $primary->basedir . '/inserts.sql';
open(my $fh, '>', $script) or die "$script: $!";
print $fh map { "INSERT INTO g VALUES ($_, vec($_), $_ % 10);\n" } 101 .. 6000;
close($fh);
my ($out, $err) = ('', '');
my $h = IPC::Run::start([ 'psql', '-X', '-q', '-d', $primary->connstr('postgres'), '-f', $script ],
	'>', \$out, '2>', \$err);
$primary->poll_query_until('postgres', 'SELECT count(*) >= 1500 FROM g')
  or die "inserts did not get going: $err";
$primary->stop('immediate');
$h->finish;
$primary->start;
my $rows = $primary->safe_psql('postgres', 'SELECT count(*) FROM g');
ok($rows >= 1500 && $rows < 6000, "crashed after $rows rows");
ok(training_rows($primary, 'g_idx') >= 1024, 'retrained at 1024 rows before the crash');
# (inserts may leave a node unreachable over the tunneling prefixes, 16
# here, until VACUUM links it: src/README; where the crash falls decides
# whether one is: seen in 1 of 3 runs beside another test suite)
$primary->safe_psql('postgres', 'VACUUM g');
check_verify($primary, 'g_idx', 'after a crash among inserts');
check_all_found($primary, 'g', 'after a crash among inserts');

# --- 3. on to 5000 rows: retrained at 4096 -------------------------------------------------------
$primary->safe_psql('postgres', qq{INSERT INTO g SELECT i, vec(i), i % 10
  FROM generate_series($rows + 1, 5000) i WHERE NOT EXISTS (SELECT 1 FROM g WHERE id = i)});
is(training_rows($primary, 'g_idx'), '4096', 'retrained at 4096 rows');
$primary->safe_psql('postgres', 'VACUUM g');
check_verify($primary, 'g_idx', 'after retraining at 4096');
check_all_found($primary, 'g', 'after retraining at 4096');

# the standby's stores were loaded with the codebook of 64 rows: a new build id replaces them
$primary->wait_for_catchup($standby);
check_verify($standby, 'g_idx', 'standby');
my $knn = q{SET enable_seqscan = off;
SELECT string_agg(ids, ';' ORDER BY q) FROM (
  SELECT q.id AS q, (SELECT string_agg(o.id::text, ',' ORDER BY o.v <-> q.v, o.id)
                       FROM (SELECT id, v FROM g ORDER BY v <-> q.v LIMIT 5) o) AS ids
    FROM g q WHERE q.id % 250 = 0) s};
is($standby->safe_psql('postgres', $knn), $primary->safe_psql('postgres', $knn),
	'standby: same neighbours as the primary');
check_all_found($standby, 'g', 'standby');

# --- 4. unlogged table: a crash resets it and its index; the index grows again -------------------
$primary->safe_psql('postgres', 'INSERT INTO u SELECT i, vec(i) FROM generate_series(1, 300) i');
$primary->stop('immediate');
$primary->start;
is($primary->safe_psql('postgres',
	q{SELECT (SELECT count(*) FROM u) || ' ' || nodes || ' ' || dims FROM gateann_index_info('u_idx')}),
	'0 0 0', 'unlogged table and index empty after the crash');
$primary->safe_psql('postgres', 'INSERT INTO u SELECT i, vec(i) FROM generate_series(1, 300) i');
is($primary->safe_psql('postgres', q{SELECT nodes || ' ' || pq_training_rows FROM gateann_index_info('u_idx')}),
	'300 256', 'unlogged index set up again by its first row after the crash');
check_verify($primary, 'u_idx', 'unlogged after the crash');
check_all_found($primary, 'u', 'unlogged after the crash');

done_testing();
