# Copyright: gateann authors.
#
# Shared memory is given back: the segment of a dropped index or of a
# truncated table is no longer mapped by a session that held it once that
# session ends a transaction (not only when it disconnects); without
# shared_preload_libraries, a
# private copy larger than gateann.max_shared_memory is not kept by an idle
# session, and a copy of a dropped index is freed.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $node = gateann_node('shmem', preload => 1, conf => "gateann.max_shared_memory = '8MB'");

# tables of 4,000 rows of 32 dimensions: each store ~0.6 MB
$node->safe_psql('postgres', qq{
SELECT setseed(0.5);
CREATE TABLE a (id int, v real[]);
@{[ random_vectors_sql('a', 4000, 32) ]}
CREATE INDEX a_idx ON a USING gateann (v);
CREATE TABLE b (LIKE a);
INSERT INTO b SELECT * FROM a;
CREATE INDEX b_idx ON b USING gateann (v);
});

# DSM segments a backend maps, from its /proc/<pid>/maps (posix shared memory: /dev/shm)
sub dsm_mappings
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/maps") or return -1;
	my %segs = map { /(PostgreSQL\.\d+)/ ? ($1 => 1) : () } <$fh>;
	close $fh;
	return scalar(keys %segs);
}

SKIP:
{
	skip 'no /proc', 4 unless -r "/proc/self/maps";

	my $s1 = $node->background_psql('postgres');
	my $pid = $s1->query_safe('SELECT pg_backend_pid()');
	my $before = dsm_mappings($pid);
	$s1->query_safe(q{SELECT gateann_prewarm('a_idx')});
	is(dsm_mappings($pid), $before + 1, 'a session that used an index maps its store');
	$node->safe_psql('postgres', 'DROP INDEX a_idx');
	$s1->query_safe('SELECT 1');
	is(dsm_mappings($pid), $before, 'after DROP INDEX, its next transaction unmaps the store');

	$s1->query_safe(q{SELECT gateann_prewarm('b_idx')});
	is(dsm_mappings($pid), $before + 1, 'the other index is mapped');
	$node->safe_psql('postgres', 'TRUNCATE b');
	$s1->query_safe('SELECT 1');
	is(dsm_mappings($pid), $before, 'after TRUNCATE, its next transaction unmaps the store');
	$s1->quit;
}

$node->safe_psql('postgres', qq{
SELECT setseed(0.7);
CREATE TABLE c (id int, v real[]);
@{[ random_vectors_sql('c', 12000, 64) ]}
CREATE INDEX c_idx ON c USING gateann (v);
});

# --- a loader terminated midway -------------------------------------------------------------------
# Its entry must not count against the budget once the index is rebuilt (a new store key): with a
# budget that holds c_idx's store once but not twice, the rebuilt index's store still loads shared.
# gateann.load_delay holds the load at its start, after the entry is claimed.
my $store_bytes = $node->safe_psql('postgres', q{SELECT gateann_prewarm('c_idx');
SELECT pq_bytes + neighbor_store_bytes + filter_store_bytes FROM gateann_index_info('c_idx')});
$store_bytes = (split /\n/, $store_bytes)[-1];
my $budget_mb = int(($store_bytes * 1.5) / (1024 * 1024)) + 1;
cmp_ok($budget_mb * 1024 * 1024, '<', 2 * $store_bytes, "a budget of $budget_mb MB holds the store once, not twice");
$node->safe_psql('postgres', qq{ALTER SYSTEM SET gateann.max_shared_memory = '${budget_mb}MB';
SELECT pg_reload_conf();});
$node->safe_psql('postgres', 'REINDEX INDEX c_idx');

my $s3 = $node->background_psql('postgres', on_error_stop => 0);
my $pid3 = $s3->query_safe('SELECT pg_backend_pid()');
$s3->query_safe(q{SET gateann.load_delay = '10min'});
$s3->query_until(qr/loading/, "\\echo loading\nSELECT gateann_prewarm('c_idx');\n");
ok($node->poll_query_until('postgres',
		qq{SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = $pid3}),
	'the loader waits inside its load');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid3)");
ok($node->poll_query_until('postgres', qq{SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid3}),
	'the loader is gone');
eval { $s3->quit; };

$node->safe_psql('postgres', 'REINDEX INDEX c_idx');
my ($ret3, $out3, $err3) = $node->psql('postgres',
	q{SELECT gateann_prewarm('c_idx') > 0; SELECT shared FROM gateann_index_info('c_idx')});
is($out3, "t\nt", 'after a loader was terminated midway and the index rebuilt, its store loads into shared memory');
unlike($err3, qr/private copy/, 'no private copy was needed');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET gateann.max_shared_memory; SELECT pg_reload_conf();});

# --- private copies (no shared_preload_libraries) ---------------------------------------------------
$node->append_conf('postgresql.conf', q{shared_preload_libraries = ''
gateann.max_shared_memory = '1MB'});
$node->restart;

sub private_bytes
{
	my ($s) = @_;
	return $s->query_safe(q{SELECT coalesce(sum(total_bytes), 0) FROM pg_backend_memory_contexts
  WHERE name = 'gateann private store'});
}

my $s2 = $node->background_psql('postgres');
$s2->query_safe(q{LOAD 'gateann'; SET client_min_messages = warning});
$s2->query_safe(q{SET enable_seqscan = off; SELECT count(*) FROM (SELECT id FROM c ORDER BY v <-> (SELECT v FROM c WHERE id = 3) LIMIT 5) s});
is(private_bytes($s2), '0', 'a private copy larger than the budget is not kept after its transaction');
$s2->query_safe(q{BEGIN; SET LOCAL enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM c ORDER BY v <-> (SELECT v FROM c WHERE id = 3) LIMIT 5) s});
cmp_ok(private_bytes($s2), '>', 1024 * 1024, 'it exists during its transaction');
$s2->query_safe('COMMIT');

# a small table: its copy fits the budget and is kept, until its index is dropped
$node->safe_psql('postgres', q{CREATE TABLE e (id int, v real[]);
INSERT INTO e SELECT i, ARRAY[i % 7, i % 11, i % 13, 1]::real[] FROM generate_series(1, 500) i;
CREATE INDEX e_idx ON e USING gateann (v);});
$s2->query_safe(q{SET enable_seqscan = off; SELECT count(*) FROM (SELECT id FROM e ORDER BY v <-> '{1,2,3,1}' LIMIT 5) s});
cmp_ok(private_bytes($s2), '>', 0, 'a copy within the budget is kept');
$node->safe_psql('postgres', 'DROP INDEX e_idx');
$s2->query_safe(q{SELECT count(*) FROM (SELECT id FROM c ORDER BY id LIMIT 1) s});
$s2->query_safe(q{SET enable_seqscan = off; SELECT count(*) FROM (SELECT id FROM c ORDER BY v <-> (SELECT v FROM c WHERE id = 3) LIMIT 5) s});
is(private_bytes($s2), '0', 'the copy of a dropped index is freed');
$s2->quit;

$node->stop;
done_testing();
