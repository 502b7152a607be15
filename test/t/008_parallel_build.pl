# Copyright: gateann authors.
#
# The number of parallel workers that build the graph is the planner's choice
# for the table, as for a btree build: the table's parallel_workers option,
# else a number growing with the table's size in pages, at most
# max_parallel_maintenance_workers, cut so that each participant keeps 32 MB of
# maintenance_work_mem; none for a temporary table.  The build says what it
# chose at DEBUG1; every index built here must still find its rows.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $node = gateann_node('main');
my ($offset, $log);

$node->safe_psql('postgres', q{
SELECT setseed(0.25);
CREATE TABLE t (id int PRIMARY KEY, embedding real[]);
} . random_vectors_sql('t', 12000, 8) . q{
ANALYZE t;
});

# Build an index on $table with the session settings $set, and return what
# the build logged about its workers: 'serial' or the number of workers asked
# for.  The index must find 30 sampled rows as their own nearest row.
sub build_workers
{
	my ($table, $set, $name) = @_;
	my $offset = -s $node->logfile;

	my $found = $node->safe_psql('postgres', qq{
SET log_min_messages = debug1;
$set
CREATE INDEX ${table}_idx ON $table USING gateann (embedding)
  WITH (max_neighbors = 16, build_search_list_size = 32);
RESET log_min_messages;
SET enable_seqscan = off;
SELECT count(*) FROM $table s
 WHERE s.id % 400 = 0
   AND (SELECT o.id FROM $table o ORDER BY o.embedding <-> s.embedding LIMIT 1) = s.id;
DROP INDEX ${table}_idx;
});
	cmp_ok($found, '>=', 28, "$name: the index finds its rows ($found of 30)");

	my $log = slurp_file($node->logfile, $offset);
	return 'serial'
	  if $log =~ /gateann: building the graph serially: the planner chose no parallel workers/;
	return $1
	  if $log =~ /gateann: building the graph, pass 1 \(nodes \d+ to \d+\), with \d+ of (\d+) parallel workers launched/;
	return 'unknown';
}

# Of the 30 rows of $table whose id is a multiple of 400, how many find, as
# the index's nearest row o to the row s, one for which $hit holds
sub sampled_rows_found
{
	my ($table, $hit) = @_;
	return $node->safe_psql('postgres', qq{
SET enable_seqscan = off;
SELECT count(*) FROM $table s
 WHERE s.id % 400 = 0
   AND (SELECT $hit FROM $table o ORDER BY o.embedding <-> s.embedding LIMIT 1)});
}

# 12,000 short rows fill about 130 pages, below min_parallel_table_scan_size
# (8 MB): the planner chooses no workers.
is(build_workers('t', '', 'small table'), 'serial', 'a small table builds serially');

# The size rule: a 1 MB threshold (128 pages) gives one worker, 64 kB three,
# capped at max_parallel_maintenance_workers.
is(build_workers('t', "SET min_parallel_table_scan_size = '1MB';", 'threshold 1MB'),
	'1', 'a table past min_parallel_table_scan_size gets one worker');
is( build_workers(
		't',
		"SET min_parallel_table_scan_size = '64kB'; SET max_parallel_maintenance_workers = 2;",
		'threshold 64kB'),
	'2',
	'workers grow with the size, up to max_parallel_maintenance_workers');

# Each participant keeps 32 MB of maintenance_work_mem: 64 MB leaves one worker.
is( build_workers(
		't',
		"SET min_parallel_table_scan_size = '64kB'; SET maintenance_work_mem = '64MB';",
		'64MB'),
	'1',
	'maintenance_work_mem caps the workers');

# The table's parallel_workers option wins over the size rule, still capped
# by max_parallel_maintenance_workers; 0 there means a serial build.
$node->safe_psql('postgres', 'ALTER TABLE t SET (parallel_workers = 2)');
is(build_workers('t', '', 'parallel_workers = 2'), '2', 'the table option asks for workers');
is(build_workers('t', 'SET max_parallel_maintenance_workers = 1;', 'capped'),
	'1', 'max_parallel_maintenance_workers caps the table option');
is(build_workers('t', 'SET max_parallel_maintenance_workers = 0;', 'disabled'),
	'serial', 'max_parallel_maintenance_workers = 0 builds serially');

# The PQ codebook is trained by the same workers (pq_parallel.c), with the
# codebook a serial build trains: the pages after the metapage that hold it
# (2 * dims * 256 floats: 16 kB in 8 dims, three pages) are equal byte for
# byte past their headers, read from the files after a checkpoint.
sub codebook_md5
{
	my ($index) = @_;
	return $node->safe_psql('postgres', qq{
CHECKPOINT;
SELECT string_agg(md5(pg_read_binary_file(pg_relation_filepath('$index'),
                                          b * current_setting('block_size')::int + 24,
                                          current_setting('block_size')::int - 24)), ','
                  ORDER BY b)
  FROM generate_series(1, 3) b});
}
$offset = -s $node->logfile;
$node->safe_psql('postgres', q{
SET max_parallel_maintenance_workers = 0;
CREATE INDEX serial_idx ON t USING gateann (embedding) WITH (max_neighbors = 16);
SET log_min_messages = debug1;
SET min_parallel_table_scan_size = '64kB';
SET max_parallel_maintenance_workers = 2;
CREATE INDEX parallel_idx ON t USING gateann (embedding) WITH (max_neighbors = 16);
});
$log = slurp_file($node->logfile, $offset);
like($log, qr/training the PQ codebook on 12000 rows with \d+ of 2 parallel workers launched/,
	'the parallel build trains its codebook with its workers');
like($log, qr/encoding 12000 vectors with \d+ of 2 parallel workers launched/,
	'the parallel build encodes the vectors with its workers');
my $serial_book = codebook_md5('serial_idx');
is(codebook_md5('parallel_idx'), $serial_book, 'trained in parallel: the serial codebook');

# Every code the workers wrote codes its row's vector (gateann_verify: the
# coarse centroid and each subspace's centroid a code names are the nearest).
is($node->safe_psql('postgres', q{SELECT count(*) FROM gateann_verify('parallel_idx')}),
	'0', 'encoded in parallel: gateann_verify finds every code right');
$node->safe_psql('postgres', 'DROP INDEX serial_idx; DROP INDEX parallel_idx');

# The workers also order the nodes (order.h): groups of 512 or more are split
# again, each by one process (that this gives the serial order is a unit
# test's: the numbering a table sees is packed by the graph, which differs).
# 8,000 rows packed around one point beside 4,000 spread ones leave a large
# first-level group; the index built so must be whole and find its rows.
$node->safe_psql('postgres', q{
CREATE TABLE skew (id int PRIMARY KEY, embedding real[]) WITH (parallel_workers = 1);
INSERT INTO skew SELECT i, (SELECT array_agg(((random() - 0.5 + 0 * d) *
                                             CASE WHEN i <= 8000 THEN 0.01 ELSE 4 END)::real)
                              FROM generate_series(1, 8) d)
  FROM generate_series(1, 12000) i;
ANALYZE skew;
});
$offset = -s $node->logfile;
$node->safe_psql('postgres', q{
SET log_min_messages = debug1;
SET max_parallel_maintenance_workers = 1;
CREATE INDEX skew_parallel ON skew USING gateann (embedding) WITH (max_neighbors = 16);
});
$log = slurp_file($node->logfile, $offset);
like($log, qr/ordering 12000 vectors with \d+ of 1 parallel workers launched/,
	'the parallel build orders the nodes with its workers');
is( $node->safe_psql(
		'postgres', q{
SELECT (SELECT count(*) FROM gateann_verify('skew_parallel')) || ' ' ||
       (SELECT count(*) FROM gateann_graph('skew_parallel'))}),
	'0 12000',
	'ordered in parallel: every row a node, gateann_verify finds nothing wrong');
is(sampled_rows_found('skew', 'o.id = s.id'), '30',
	'ordered in parallel: every sampled row finds itself');
$node->safe_psql('postgres', 'DROP TABLE skew');

# A temporary table never gets workers.
is( build_workers(
		'tt',
		"CREATE TEMP TABLE tt (id int, embedding real[]) WITH (parallel_workers = 2); "
		  . "INSERT INTO tt SELECT * FROM t;",
		'temporary'),
	'serial',
	'a temporary table builds serially');

# Many exact copies of few vectors: every node's list fills with copies at
# once, so the two processes prune the same lists at the same time.  A prune
# runs with no lock held and is put in only if the list did not change
# meanwhile (else it is redone): the lists it leaves must be whole (gateann_verify
# and gateann_graph: within max_neighbors, no self edges, every node once) and
# every row must still find a copy of itself.
$node->safe_psql('postgres', q{
CREATE TABLE copies (id int PRIMARY KEY, embedding real[]) WITH (parallel_workers = 1);
CREATE TABLE distinct_vectors (k int, embedding real[]);
} . random_vectors_sql('distinct_vectors', 300, 8) . q{
INSERT INTO copies SELECT k + 300 * c, embedding
  FROM distinct_vectors, generate_series(0, 39) c;
ANALYZE copies;
});
$offset = -s $node->logfile;
$node->safe_psql('postgres', q{
SET log_min_messages = debug1;
SET max_parallel_maintenance_workers = 1;
CREATE INDEX copies_idx ON copies USING gateann (embedding)
  WITH (max_neighbors = 8, build_search_list_size = 32);
});
$log = slurp_file($node->logfile, $offset);
like($log, qr/building the graph, pass 1 \(nodes \d+ to \d+\), with 1 of 1 parallel workers launched/,
	'copies: built by the leader and one worker');
my @redone = ($log =~ /this process has redone (\d+) prunes of lists another changed meanwhile/g);
cmp_ok(scalar(@redone), '>=', 2, 'copies: both processes visited nodes');
note('prunes redone on a changed list: ' . join(', ', @redone));
is($node->safe_psql('postgres', q{SELECT count(*) FROM gateann_verify('copies_idx')}),
	'0', 'copies: gateann_verify finds nothing wrong');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FILTER (WHERE cardinality(neighbors) > 8
                           OR node = ANY (neighbors)
                           OR cardinality(neighbors) = 0),
       count(DISTINCT node) = count(*) AND count(*) = 12000
  FROM gateann_graph('copies_idx')}),
	'0|t',
	'copies: every node once, each list non-empty, within max_neighbors, no self edge');
is(sampled_rows_found('copies', 'o.embedding <-> s.embedding = 0'), '30',
	'copies: every sampled row finds a copy of itself');

$node->stop;
done_testing();
