# Copyright: gateann authors.
#
# The build's passes (graph.c, gateann_graph_next_step): one pass at alpha
# with half the build list where probes after its first quarter and at its
# end find enough of the nearest neighbors, else the lists are emptied and
# the graph built in two passes (alpha 1 with half the list, then alpha with
# the whole list); where the first quarter's probe passes and the whole's
# does not, the one pass's lists get the second of the two passes only.
# Clustered rows take the one pass, isotropic 64-dimensional rows at a
# degree of 16 the two, and 20,000 isotropic 256-dimensional rows (their
# first quarter easier than the whole) the one pass and the second, serially
# and with a parallel worker (whose workers are relaunched for each
# stretch); each index passes gateann_verify and finds what an exact search
# finds, as far as its data allows.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $node = gateann_node('main');

# SQL for table $table of $rows isotropic Gaussian rows in $dims dimensions
sub isotropic_rows
{
	my ($table, $dims, $rows) = @_;
	return qq{
CREATE TABLE $table (id int PRIMARY KEY, v real[]);
INSERT INTO $table
  SELECT i, ARRAY(SELECT (sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::real
                  FROM generate_series(1, $dims) d WHERE i > 0)
  FROM generate_series(1, $rows) i;
};
}

$node->safe_psql('postgres', q{
SELECT setseed(0.5);
-- 20 clusters in 16 dimensions
CREATE TABLE clustered (id int PRIMARY KEY, v real[]);
INSERT INTO clustered
  SELECT i, ARRAY(SELECT ((i % 20) * 0.37 * (d % 3 + 1) + random() * 0.4)::real
                  FROM generate_series(1, 16) d WHERE i > 0)
  FROM generate_series(1, 12000) i;
} . isotropic_rows('isotropic', 64, 10000)
  . 'SELECT setseed(0.25);' . isotropic_rows('isotropic256', 256, 20000) . q{
ANALYZE clustered, isotropic, isotropic256;
ALTER TABLE clustered SET (parallel_workers = 1);
ALTER TABLE isotropic SET (parallel_workers = 1);
ALTER TABLE isotropic256 SET (parallel_workers = 1);
});

# Build an index on $table with $with and max_parallel_maintenance_workers =
# $workers; return what the build logged and the index's recall@10 over 20
# of its rows as queries (a row found at most as far as the exact 10th
# nearest is a hit).
sub build
{
	my ($table, $with, $workers) = @_;
	my $offset = -s $node->logfile;

	my $recall = $node->safe_psql('postgres', qq{
SET log_min_messages = debug1;
SET max_parallel_maintenance_workers = $workers;
CREATE INDEX ${table}_idx ON $table USING gateann (v) $with;
RESET log_min_messages;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
CREATE TEMP TABLE truth AS
  SELECT q.id, (SELECT max(d) FROM (SELECT t.v <-> q.v AS d FROM $table t
                                    ORDER BY 1 LIMIT 10) e) AS kth
  FROM $table q WHERE q.id % 500 = 0;
RESET enable_indexscan;
SET enable_seqscan = off;
SELECT round(avg(hits) / 10.0, 3) FROM (
  SELECT (SELECT count(*) FROM (SELECT t.v <-> q.v AS d FROM $table t
                                ORDER BY t.v <-> q.v LIMIT 10) f
          WHERE f.d <= tr.kth * (1 + 1e-6)) AS hits
  FROM truth tr JOIN $table q USING (id)) h;
});
	my $problems = $node->safe_psql('postgres',
		"SELECT count(*) FROM gateann_verify('${table}_idx')");
	$node->safe_psql('postgres', "DROP INDEX ${table}_idx");
	return (slurp_file($node->logfile, $offset), $recall, $problems);
}

for my $workers (0, 1)
{
	my ($log, $recall, $problems) = build('clustered', '', $workers);
	like($log, qr/gateann build: one pass: it finds/,
		"clustered rows, $workers workers: one pass");
	unlike($log, qr/gateann build: two passes/,
		"clustered rows, $workers workers: no second pass");
	like($log, qr/building the graph, pass 1 \(nodes 0 to 3000\), with 1 of 1 parallel/,
		'the parallel build stops after a quarter for the probe')
	  if $workers;
	cmp_ok($recall, '>=', 0.98, "clustered rows, $workers workers: recall $recall");
	is($problems, '0', "clustered rows, $workers workers: gateann_verify");

	($log, $recall, $problems) = build('isotropic',
		'WITH (max_neighbors = 16, build_search_list_size = 32)', $workers);
	like($log, qr/gateann build: two passes: one pass over 2500 of 10000 nodes finds/,
		"isotropic rows, $workers workers: the first quarter's probe asks for two passes");
	like($log, qr/building the graph, pass 3 \(nodes 0 to 10000\), with 1 of 1 parallel/,
		'the parallel build runs the two passes after the quarter')
	  if $workers;
	# the first of the two with half the list, the second with the whole
	like($log, qr/gateann build: pass 2, nodes 0 to 10000 in visiting order, alpha 1.00, list 16\b/,
		"isotropic rows, $workers workers: the first of two passes, alpha 1, half the list");
	like($log, qr/gateann build: pass 3, nodes 0 to 10000 in visiting order, alpha 1.20, list 32\b/,
		"isotropic rows, $workers workers: the second, alpha 1.2, the whole list");
	# (a degree of 16 is too few for these rows: the build's NOTICE says so)
	cmp_ok($recall, '>=', 0.85, "isotropic rows, $workers workers: recall $recall");
	is($problems, '0', "isotropic rows, $workers workers: gateann_verify");

	# the quarter passes, the whole does not: its lists, then the second pass
	($log, $recall, $problems) = build('isotropic256', '', $workers);
	like($log, qr/gateann build: two passes: one pass over 20000 of 20000 nodes finds/,
		"256-d rows, $workers workers: the whole's probe asks for more");
	unlike($log, qr/gateann build: two passes: one pass over 5000 of/,
		"256-d rows, $workers workers: the quarter's did not");
	like($log, qr/gateann build: pass 2, nodes 0 to 20000 in visiting order, alpha 1.20, list 128\b/,
		"256-d rows, $workers workers: the second pass, alpha 1.2, the whole list");
	unlike($log, qr/alpha 1.00/,
		"256-d rows, $workers workers: the lists were kept (no pass at alpha 1)");
	unlike($log, qr/gateann build: pass 3/, "256-d rows, $workers workers: no third pass");
	cmp_ok($recall, '>=', 0.95, "256-d rows, $workers workers: recall $recall");
	is($problems, '0', "256-d rows, $workers workers: gateann_verify");
}

$node->stop;
done_testing();
