# Copyright: gateann authors.
#
# In-memory stores in shared memory: one copy for all backends; REINDEX,
# TRUNCATE and DROP while a store is loaded and in use by another session;
# an index in a tablespace in another directory read by every io_method;
# and private copies (with a NOTICE) when the library is not preloaded.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $node = gateann_node('stores', preload => 1);

$node->safe_psql('postgres', qq{
SELECT setseed(0.25);
CREATE TABLE t (id int PRIMARY KEY, v real[]);
@{[ random_vectors_sql('t', 3000, 16) ]}
CREATE INDEX t_idx ON t USING gateann (v);
});

my $knn = q{SET enable_seqscan = off;
SELECT string_agg(id::text, ',') FROM (SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 42) LIMIT 5) s;};

# --- one copy for two backends -----------------------------------------------------------
my $s1 = $node->background_psql('postgres');
my $bytes = $s1->query_safe(q{SELECT gateann_prewarm('t_idx')});
# header + codebook 16*256*4 + codes 3000*4 + neighbors 3000*33*4 + deleted bits
cmp_ok($bytes, '>=', 16 * 256 * 4 + 3000 * 4 + 3000 * 33 * 4 + 375, 'prewarm loads all stores');
is($s1->query_safe(q{SELECT loaded AND shared FROM gateann_index_info('t_idx')}), 't',
	'prewarmed store is shared');
# a second backend finds it without loading anything
is($node->safe_psql('postgres', q{SELECT loaded AND shared FROM gateann_index_info('t_idx')}),
	't', 'another backend sees the same shared store');
my $before = $node->safe_psql('postgres', $knn);
like($before, qr/^42,/, 'scan through the shared store finds the row itself first');

# --- REINDEX while another session is scanning ---------------------------------------------
$s1->query_safe(q{SET enable_seqscan = off});
$s1->query_safe(q{BEGIN});
$s1->query_safe(q{DECLARE c CURSOR FOR SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 7) LIMIT 50});
is($s1->query_safe(q{FETCH 1 FROM c}), '7', 'cursor scan started');
my $old_build = $node->safe_psql('postgres', q{SELECT build_id FROM gateann_index_info('t_idx')});

my $s2 = $node->background_psql('postgres');
$s2->query_until(qr/start/, q{\echo start
REINDEX INDEX t_idx;
\echo reindexed
});
# the cursor keeps working on the store it mapped while REINDEX waits for its lock
my @fetched = split /\n/, $s1->query_safe(q{FETCH 10 FROM c});
is(scalar(@fetched), 10, 'scan continues while REINDEX waits');
$s1->query_safe(q{COMMIT});
$s2->query_until(qr/reindexed/, '');
my $new_build = $node->safe_psql('postgres', q{SELECT build_id FROM gateann_index_info('t_idx')});
isnt($new_build, $old_build, 'REINDEX gave a new build id');
is($node->safe_psql('postgres', q{SELECT loaded FROM gateann_index_info('t_idx')}), 'f',
	'the old store is not served for the new build');
is($node->safe_psql('postgres', $knn), $before, 'same rows after REINDEX');
is($node->safe_psql('postgres', q{SELECT loaded AND shared FROM gateann_index_info('t_idx')}), 't',
	'new store loaded and shared');

# --- TRUNCATE and DROP while loaded ------------------------------------------------------------
$node->safe_psql('postgres', q{CREATE TABLE t2 AS SELECT * FROM t});
$node->safe_psql('postgres', q{CREATE INDEX t2_idx ON t2 USING gateann (v)});
$s1->query_safe(q{SELECT gateann_prewarm('t2_idx')});
$node->safe_psql('postgres', q{TRUNCATE t2});
is($node->safe_psql('postgres', q{SET enable_seqscan = off; SELECT count(*) FROM (SELECT id FROM t2 ORDER BY v <-> '{1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1}' LIMIT 5) s}),
	'0', 'TRUNCATE: no rows from the old store');
is($s1->query_safe(q{SELECT nodes FROM gateann_index_info('t2_idx')}), '0',
	'TRUNCATE: index is empty');
$s1->query_safe(q{SELECT gateann_prewarm('t_idx')});
$node->safe_psql('postgres', q{DROP INDEX t_idx});
$node->safe_psql('postgres', q{CREATE INDEX t_idx ON t USING gateann (v)});
is($node->safe_psql('postgres', q{SELECT loaded FROM gateann_index_info('t_idx')}), 'f',
	'DROP + CREATE: new index has no store until used');
is($node->safe_psql('postgres', $knn), $before, 'same rows from the recreated index');
# the session that mapped the dropped store keeps working
is($s1->query_safe(q{SET enable_seqscan = off; SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> '{0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}' LIMIT 20) s}),
	'20', 'a session that mapped a dropped store still scans');

# --- a tablespace in another directory, every io_method ----------------------------------------
my $tsdir = PostgreSQL::Test::Utils::tempdir_short();
$node->safe_psql('postgres', qq{CREATE TABLESPACE elsewhere LOCATION '$tsdir'});
$node->safe_psql('postgres', q{CREATE INDEX t_ts_idx ON t USING gateann (v) TABLESPACE elsewhere});
$node->safe_psql('postgres', q{DROP INDEX t_idx});
$node->safe_psql('postgres', q{CHECKPOINT});
my %rows;
foreach my $method (qw(io_uring pread buffer))
{
	my $out = $node->safe_psql('postgres', qq{SET client_min_messages = warning;
SET gateann.io_method = '$method';
$knn
SELECT io_method FROM gateann_last_scan();});
	my ($ids, $used) = split /\n/, $out;
	$rows{$method} = $ids;
	ok($used eq $method || ($method ne 'buffer' && ($used eq 'pread' || $used eq 'buffer')),
		"io_method $method used $used");
}
is($rows{pread}, $rows{buffer}, 'tablespace index: pread and buffer give the same rows');
is($rows{io_uring}, $rows{buffer}, 'tablespace index: io_uring and buffer give the same rows');
is($rows{buffer}, $before, 'tablespace index: same rows as before');

# --- gateann.max_shared_memory: LRU eviction, and a store that does not fit -------------------
# Stores have room for an eighth more nodes + 1024 (for inserts): t_ts_idx's (3000 rows) are
# ~0.65 MB, t3's (9000 rows) ~1.6 MB, so a 2 MB budget holds one of them.
$node->safe_psql('postgres', q{CREATE TABLE t3 AS SELECT i AS id, v FROM t, generate_series(0, 2) g(i);
CREATE INDEX t_ts2_idx ON t3 USING gateann (v) TABLESPACE elsewhere});
$node->append_conf('postgresql.conf', q{gateann.max_shared_memory = '2MB'});
$node->reload;
$s1->query_safe(q{SELECT gateann_prewarm('t_ts_idx')});
is($node->safe_psql('postgres', q{SELECT shared FROM gateann_index_info('t_ts_idx')}), 't',
	'first store loaded under a 2 MB budget');
$s1->query_safe(q{SELECT gateann_prewarm('t_ts2_idx')});
is($node->safe_psql('postgres', q{SELECT ARRAY[(SELECT shared FROM gateann_index_info('t_ts_idx')),
  (SELECT shared FROM gateann_index_info('t_ts2_idx'))]}), '{f,t}',
	'loading a second store evicted the least recently used one');
$node->safe_psql('postgres', q{DROP TABLE t3});
# a store larger than the whole budget: a private copy, with a NOTICE
$node->safe_psql('postgres', q{CREATE TABLE big (id int, v real[]);
INSERT INTO big SELECT i, array_fill((i % 97)::real, ARRAY[64]) FROM generate_series(1, 20000) i;
SET maintenance_work_mem = '256MB';
CREATE INDEX big_idx ON big USING gateann (v);});
my ($r, $o, $e) = $node->psql('postgres', q{SELECT gateann_prewarm('big_idx') > 0});
is($o, 't', 'prewarm of a store over the budget still works');
like($e, qr/do not fit gateann.max_shared_memory/, 'NOTICE names gateann.max_shared_memory');
$node->safe_psql('postgres', q{DROP TABLE big});

$s1->quit;
$s2->quit;

# --- without shared_preload_libraries: private copies, with a NOTICE ----------------------------
$node->append_conf('postgresql.conf', q{shared_preload_libraries = ''});
$node->restart;
my ($ret, $stdout, $stderr) = $node->psql('postgres', $knn);
is($ret, 0, 'scan works without preload');
is($stdout, $before, 'same rows from a private copy');
like($stderr, qr/private copy/, 'NOTICE says the stores are private');
is($node->safe_psql('postgres', qq{SET enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> '{1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1}' LIMIT 3) s;
SELECT loaded, shared FROM gateann_index_info('t_ts_idx');}), "3\nt|f", 'private store: loaded, not shared');

$node->stop;
done_testing();
