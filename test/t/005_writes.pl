# Copyright: gateann authors.
#
# Writes under stress: a pgbench mix of inserts, deletes, filtered queries and VACUUM on two
# clients; a crash (immediate stop) in the middle of a stream of committed inserts and in the
# middle of a VACUUM; and a streaming standby, replaying with wal_consistency_checking, that
# must answer like the primary.  After each step gateann_verify must be clean and every
# committed row must be found by a search for its own vector.

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

# 8 clusters of vectors; a label and a tenant column to filter on
$primary->safe_psql('postgres', qq{
CREATE FUNCTION vec(i int) RETURNS real[] LANGUAGE sql VOLATILE
  AS \$\$ SELECT array_agg((i % 8) * 2 + random()::real) FROM generate_series(1, $dims) \$\$;
CREATE TABLE t (id bigint PRIMARY KEY, v real[], lab int, tenant int);
CREATE SEQUENCE t_id START 100001;
INSERT INTO t SELECT i, vec(i), i % 10, i % 3 FROM generate_series(1, 2000) i;
CREATE INDEX t_idx ON t USING gateann (v, lab, tenant) WITH (max_neighbors = 24);
});
# the standby loads its stores now: later it must refresh the slots the primary reuses
$primary->wait_for_catchup($standby);
$standby->safe_psql('postgres', q{SELECT gateann_prewarm('t_idx')});

# Every committed row (or a sample: ids with id % $mod = 0) is its own nearest neighbour.
sub check_all_found
{
	my ($node, $what, $mod) = @_;
	$mod //= 1;
	my $res = $node->safe_psql('postgres', qq{
SET enable_seqscan = off; SET gateann.search_list_size = 100;
SELECT count(*) FILTER (WHERE (SELECT o.id FROM t o ORDER BY o.v <-> i.v LIMIT 1) = i.id)
       || '/' || count(*) FROM t i WHERE i.id % $mod = 0});
	my ($found, $total) = split m{/}, $res;
	ok($total > 0 && $found == $total, "$what: every row finds itself ($res)");
}

sub check_verify
{
	my ($node, $what) = @_;
	is($node->safe_psql('postgres', q{SELECT string_agg(p, E'\n') FROM gateann_verify('t_idx') p}),
		'', "$what: gateann_verify clean");
}

# --- 1. pgbench: inserts + deletes + filtered queries + VACUUM, 2 clients ------------------------
# About 1870 inserts and 370 deletes (whose slots VACUUM frees and inserts take again): more
# nodes than the room the in-memory stores of a 2000-row index have (an eighth + 1024 nodes),
# so one client outgrows the store while the other writes into it.
my $n_before = $primary->safe_psql('postgres', 'SELECT count(*) FROM t');
$primary->pgbench(
	'--no-vacuum --client=2 --transactions=1500 --random-seed=7',
	0,
	[qr{processed: 3000/3000}],
	[qr{^(?:(?!ERROR|FATAL|WARNING).)*$}s],
	'mixed workload: no errors',
	{
		'gateann_insert@10' => q{
\set lab random(0, 9)
INSERT INTO t SELECT nextval('t_id'), vec(:lab), :lab, :lab % 3;
},
		'gateann_delete@2' => q{
\set id random(1, 2000)
DELETE FROM t WHERE id = :id;
},
		'gateann_query@4' => q{
\set lab random(0, 9)
SET enable_seqscan = off;
SELECT id FROM t WHERE lab = :lab AND tenant = :lab % 3 ORDER BY v <-> vec(:lab) LIMIT 10;
},
		'gateann_vacuum@1' => q{
VACUUM t;
}
	});
$primary->safe_psql('postgres', 'VACUUM t');
my $n_after = $primary->safe_psql('postgres', 'SELECT count(*) FROM t');
cmp_ok($primary->safe_psql('postgres', q{SELECT nodes FROM gateann_index_info('t_idx')}), '>', 3274,
	'the index outgrew its first in-memory stores (room for 3274 nodes)');
ok($n_after != $n_before, "the workload changed the table ($n_before -> $n_after rows)");
my $inserted = $primary->safe_psql('postgres', q{SELECT last_value - 100000 FROM t_id});
cmp_ok($primary->safe_psql('postgres', q{SELECT nodes FROM gateann_index_info('t_idx')}), '<',
	2000 + $inserted, "inserts took slots VACUUM freed ($inserted rows inserted)");
check_verify($primary, 'after the mixed workload');
check_all_found($primary, 'after the mixed workload');
is($primary->safe_psql('postgres', q{SELECT live_nodes FROM gateann_index_info('t_idx')}),
	$n_after, 'live index nodes match the table after VACUUM');
is($primary->safe_psql('postgres', q{SELECT reltuples FROM pg_class WHERE relname = 't_idx'}),
	$n_after, 'pg_class.reltuples of the index is correct after VACUUM');

# --- 2. the standby replays all of it ----------------------------------------------------------
# Its stores were loaded before the workload: they caught up the appended nodes and refreshed
# the reused slots from the metapage's ring (verify compares every PQ code with its record).
$primary->wait_for_catchup($standby);
check_all_found($standby, 'standby, stores loaded before the workload', 7);
check_verify($standby, 'standby, stores loaded before the workload');
# (its rows of older nodes stay as loaded, steering tunneling only: restart to compare paths)
$standby->restart;
my $knn = q{SET enable_seqscan = off;
SELECT string_agg(id::text, ',') FROM (
  SELECT id FROM t WHERE lab = 4 ORDER BY v <-> (SELECT v FROM t WHERE lab = 4 ORDER BY id DESC LIMIT 1)
  LIMIT 10) s;};
is($standby->safe_psql('postgres', $knn), $primary->safe_psql('postgres', $knn),
	'standby: same filtered neighbours as the primary');
check_all_found($standby, 'standby', 7);
check_verify($standby, 'standby');

# --- 3. crash in the middle of a stream of committed inserts -----------------------------------
$primary->safe_psql('postgres', q{
CREATE PROCEDURE insert_stream(n int) LANGUAGE plpgsql AS $$
BEGIN
  FOR k IN 1..n LOOP
    INSERT INTO t SELECT nextval('t_id'), vec(k), k % 10, k % 3;
    COMMIT;
  END LOOP;
END $$;});
my $before_stream = $primary->safe_psql('postgres', 'SELECT count(*) FROM t');
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[ 'psql', '-X', '-d', $primary->connstr('postgres'), '-c', 'CALL insert_stream(100000)' ],
	'>', \$out, '2>', \$err);
# wait until a good number of inserts committed, then crash
$primary->poll_query_until('postgres',
	"SELECT count(*) > $before_stream + 300 FROM t") or die 'insert stream did not progress';
$primary->stop('immediate');
$h->finish;
$primary->start;
my $after_crash = $primary->safe_psql('postgres', 'SELECT count(*) FROM t');
ok($after_crash > $before_stream + 300, "inserts committed before the crash survived ($after_crash rows)");
check_verify($primary, 'after a crash during inserts');
check_all_found($primary, 'after a crash during inserts');
is($primary->safe_psql('postgres', q{SET enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> vec(3) LIMIT 50) s
 WHERE NOT EXISTS (SELECT 1 FROM t u WHERE u.id = s.id)}), '0',
	'no row the index returns is missing from the table');

# --- 4. crash in the middle of a VACUUM ----------------------------------------------------------
# A slowed-down VACUUM t, crashed (immediate stop) once it reaches `phase` (of
# pg_stat_progress_vacuum) and `linger` seconds more; the primary is restarted.
sub crash_during_vacuum
{
	my ($phase, $linger) = @_;
	my ($vout, $verr) = ('', '');
	my $vh = IPC::Run::start(
		[ 'psql', '-X', '-d', $primary->connstr('postgres'),
		  '-c', 'SET vacuum_cost_delay = 5', '-c', 'SET vacuum_cost_limit = 1', '-c', 'VACUUM t' ],
		'>', \$vout, '2>', \$verr);
	$primary->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_progress_vacuum WHERE phase = '$phase'")
	  or die "VACUUM did not reach phase '$phase': $verr";
	sleep $linger if $linger;
	$primary->stop('immediate');
	$vh->finish;
	$primary->start;
}

$primary->safe_psql('postgres', 'DELETE FROM t WHERE id % 4 = 0');
crash_during_vacuum('vacuuming indexes', 0);
check_verify($primary, 'after a crash during VACUUM');
check_all_found($primary, 'after a crash during VACUUM', 5);
$primary->safe_psql('postgres', 'VACUUM t');
check_verify($primary, 'VACUUM after the crash');
is($primary->safe_psql('postgres', q{SET enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> vec(2) LIMIT 100) s WHERE id % 4 = 0 AND id <= 2000}),
	'0', 'deleted rows are never returned');

# --- 5. crash in the middle of VACUUM's consolidation (cleanup) ---------------------------------
$primary->safe_psql('postgres', 'DELETE FROM t WHERE id % 3 = 0');
crash_during_vacuum('cleaning up indexes', 1);
check_verify($primary, 'after a crash during consolidation');
check_all_found($primary, 'after a crash during consolidation', 5);
$primary->safe_psql('postgres', 'VACUUM t');
check_verify($primary, 'VACUUM after the crash during consolidation');
is($primary->safe_psql('postgres', q{SELECT deleted_nodes <= 1 FROM gateann_index_info('t_idx')}),
	't', 'the next VACUUM finished the consolidation');
$primary->safe_psql('postgres', q{INSERT INTO t SELECT nextval('t_id'), vec(k), k % 10, k % 3
  FROM generate_series(1, 300) k});
check_verify($primary, 'inserts into freed slots');
# (an insert's prune of a full neighbor list can take a node's last in-edge, as in FreshDiskANN;
# VACUUM's walk from the entry point links such nodes again)
$primary->safe_psql('postgres', 'VACUUM t');
check_all_found($primary, 'inserts into freed slots, then VACUUM');

# --- 6. a store loaded while VACUUM writes --------------------------------------------------------
# Inserts outgrow the in-memory store while a slowed-down VACUUM consolidates: the store they load
# reads pages VACUUM has not finished with, and VACUUM's changes went to the old store.  VACUUM
# must drop such a store (the next user loads one from the pages): else freed slots stay
# "present" in it and its neighbor rows point to them (gateann_verify reports both).
$primary->safe_psql('postgres', 'DELETE FROM t WHERE id % 7 = 0');
my $room = $primary->safe_psql('postgres',
	q{SELECT nodes / 8 + 1100 + free_slots FROM gateann_index_info('t_idx')});
{
	my ($vout, $verr) = ('', '');
	my $vh = IPC::Run::start(
		[ 'psql', '-X', '-d', $primary->connstr('postgres'),
		  '-c', 'SET vacuum_cost_delay = 2', '-c', 'SET vacuum_cost_limit = 1', '-c', 'VACUUM t' ],
		'>', \$vout, '2>', \$verr);
	$primary->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_progress_vacuum WHERE phase = 'cleaning up indexes'")
	  or die "VACUUM did not reach its cleanup: $verr";
	$primary->safe_psql('postgres', qq{INSERT INTO t SELECT nextval('t_id'), vec(k), k % 10, k % 3
	  FROM generate_series(1, $room) k});
	is($primary->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_progress_vacuum WHERE phase = 'cleaning up indexes'}),
		'1', 'the inserts ended while VACUUM was still consolidating');
	$vh->finish;
	is($verr, '', 'the slowed-down VACUUM ran without errors');
}
check_verify($primary, 'a store loaded during consolidation');
$primary->safe_psql('postgres', 'VACUUM t');
check_verify($primary, 'a store loaded during consolidation, then VACUUM');
check_all_found($primary, 'a store loaded during consolidation', 3);

# the standby followed through all the crashes.  (Its stores miss the primary's changes to older
# nodes' neighbor rows, which only steer tunneling: restart it so both traverse alike.)
$primary->wait_for_catchup($standby);
$standby->restart;
is($standby->safe_psql('postgres', $knn), $primary->safe_psql('postgres', $knn),
	'standby: same neighbours after the crashes');

# --- 7. promotion ---------------------------------------------------------------------------------
# A standby's scans read through shared buffers, and replay does not raise its stores' block
# marks.  After promotion scans read the files directly: a store loaded during recovery must not
# be served then (its marks would accept file pages older than what replay left in shared
# buffers); the first scan loads a new one.
$standby->safe_psql('postgres', q{SELECT gateann_prewarm('t_idx')});
$primary->safe_psql('postgres', q{INSERT INTO t SELECT nextval('t_id'), vec(k), k % 10, k % 3
  FROM generate_series(1, 200) k});
$primary->wait_for_catchup($standby);
check_all_found($standby, 'standby, before promotion', 3);
is($standby->safe_psql('postgres', q{SELECT loaded FROM gateann_index_info('t_idx')}),
	't', 'standby: the stores loaded during recovery are in use');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby did not finish its promotion';
is($standby->safe_psql('postgres', q{SELECT loaded FROM gateann_index_info('t_idx')}),
	'f', 'promoted: the stores loaded during recovery are not served');
check_all_found($standby, 'promoted standby', 3);
is($standby->safe_psql('postgres', q{SELECT loaded FROM gateann_index_info('t_idx')}),
	't', 'promoted: the first scan loaded new stores');
check_verify($standby, 'promoted standby');

done_testing();
