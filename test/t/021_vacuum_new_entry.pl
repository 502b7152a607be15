# Copyright: gateann authors.
#
# Inserts into an index whose rows were all deleted, while VACUUM frees the
# deleted nodes' slots.  An insert whose search finds no live node becomes
# the entry point, linked to the deleted nodes it met (they still lead to
# what lies behind them), and VACUUM repairs that list before it frees
# them -- if its repair pass covers the node.  Before the fix, a node
# appended after the pass read the node count kept its edges to slots that
# were then freed (gateann_verify: "neighbor i is node M, a free slot").
# Now VACUUM marks the metapage while it frees slots, and an insert that
# takes its id meanwhile drops every edge to a deleted node itself; an
# insert whose search meets few live nodes searches again with a longer
# list, and one that finds only deleted nodes but a live entry point links
# to that.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $node = gateann_node('main', preload => 1, conf => "autovacuum = off");

# Rounds (the race is not met every time), each on a new index of 20,000
# rows all deleted: 40 statements of 200 new rows from another session,
# and a VACUUM once the first are in -- its first pass marks every old node
# deleted while the inserts go on, and it frees their slots meanwhile too.
for my $round (1 .. 4)
{
	$node->safe_psql('postgres',
		'DROP TABLE IF EXISTS t;' . loaded_tenant_table_sql("0.$round", 20000, 32) . 'DELETE FROM t;');
	my @inserts;
	for my $k (0 .. 39)
	{
		push @inserts, '-c',
		  sprintf(q{INSERT INTO t SELECT %d + i, v, jsonb_build_object('tenant', i %% 10) FROM (}
			  . q{SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 32) WHERE i > 0) v }
			  . q{FROM generate_series(%d, %d) i) s}, 100000 * $round, 200 * $k + 1, 200 * $k + 200);
	}
	my ($iout, $ierr) = ('', '');
	my $ih = IPC::Run::start(
		[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), @inserts ],
		'>', \$iout, '2>', \$ierr);
	$node->poll_query_until('postgres', "SELECT count(*) >= 200 FROM t WHERE id > 100000 * $round")
	  or die "no rows inserted: $ierr";
	my ($vout, $verr) = ('', '');
	IPC::Run::run(
		[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
		  '-c', 'VACUUM t' ],
		'>', \$vout, '2>', \$verr);
	is($?, 0, "round $round: VACUUM finished") or diag($verr);
	$ih->finish;
	is($?, 0, "round $round: the inserts finished") or diag($ierr);

	# (a node that inserts' reverse-edge prunes left with no way in is for
	# the next VACUUM's walk: only edges to free slots count here)
	is( $node->safe_psql(
			'postgres', q{SELECT string_agg(p, E'\n') FROM gateann_verify('t_idx') p
 WHERE p NOT LIKE '%unreachable from the entry points%'}),
		'', "round $round: no live node has an edge to a free slot");
}

# After a last VACUUM every sampled row finds itself.  (Before the inserts
# widened their search among deleted nodes, a row inserted as VACUUM began
# could end up with one neighbor and one in-edge: reachable, but missed by
# a search for its own vector even with a list of 2,000, in one round of
# four to six.)
$node->safe_psql('postgres', 'VACUUM t');
is( $node->safe_psql(
		'postgres', q{
SET enable_seqscan = off;
SET gateann.search_list_size = 200;
SELECT count(*) FILTER (WHERE (SELECT o.id FROM t o ORDER BY o.v <-> s.v LIMIT 1) = s.id)
       || ' of ' || count(*)
  FROM t s WHERE s.id % 7 = 0}),
	$node->safe_psql('postgres', q{SELECT count(*) || ' of ' || count(*) FROM t WHERE id % 7 = 0}),
	'after a last VACUUM, every sampled row finds itself');
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM gateann_graph('t_idx') g JOIN t ON t.ctid = g.heap_tid
 WHERE NOT g.deleted AND cardinality(g.neighbors) < 8}),
	'0', 'no live node has fewer than 8 neighbors');
is($node->safe_psql('postgres', q{SELECT string_agg(p, E'\n') FROM gateann_verify('t_idx') p}),
	'', 'and gateann_verify finds nothing');

$node->stop;
done_testing();
