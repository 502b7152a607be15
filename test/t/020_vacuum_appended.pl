# Copyright: gateann authors.
#
# VACUUM's consolidation sizes its per-node arrays by the node count it reads
# when it begins.  Inserts go on meanwhile; when they append past the capacity
# of the loaded store, a new store is loaded, and VACUUM walks that one, read
# with the metapage again: its walk then meets nodes past the count it began
# with.  Before the fix the walk marked those in an array sized for fewer
# nodes (memory past its end was overwritten; an autovacuum worker died with
# "double free or corruption" after langchain's PGVector deleted a
# collection and added it again).  Here: nine rows in ten of a table
# deleted, a slowed VACUUM, and inserts that append past the store's
# capacity while it collects the deleted nodes.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $node = gateann_node('main', preload => 1, conf => "autovacuum = off");

# 2,000 rows: the loaded store holds 2,000 + 2,000 / 8 + 1,024 = 3,274 nodes
$node->safe_psql('postgres',
	loaded_tenant_table_sql(0.5, 2000, 16) . 'DELETE FROM t WHERE id % 10 <> 0;');
is($node->safe_psql('postgres', q{SELECT loaded FROM gateann_index_info('t_idx')}),
	't', 'the store is loaded before VACUUM');

my $offset = -s $node->logfile;
my ($vout, $verr) = ('', '');
my $vh = IPC::Run::start(
	[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
	  '-c', 'SET log_min_messages = debug1', '-c', 'SET vacuum_cost_delay = 20',
	  '-c', 'SET vacuum_cost_limit = 1', '-c', 'VACUUM t' ],
	'>', \$vout, '2>', \$verr);
$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_stat_progress_vacuum WHERE phase = 'cleaning up indexes'")
  or die "VACUUM did not reach its index cleanup: $verr";
# 1,600 rows appended (no slot is free yet): past the store's capacity
$node->safe_psql('postgres', q{INSERT INTO t SELECT 10000 + i, v FROM (}
	  . q{SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 16) WHERE i > 0) v }
	  . q{FROM generate_series(1, 1600) i) s});
$vh->finish;
is($?, 0, 'VACUUM finished') or diag($verr);

my $log = slurp_file($node->logfile, $offset);
like($log, qr/gateann VACUUM of "t_idx": a store was loaded meanwhile, the walk covers \d+ nodes appended since it began/,
	'VACUUM walked a store loaded meanwhile, its stamps grown to the nodes appended');
unlike($log, qr/terminated by signal|double free|corruption/, 'no backend died');
is($node->safe_psql('postgres', q{SELECT nodes > 3274 FROM gateann_index_info('t_idx')}),
	't', 'the inserts appended past the first store\'s capacity');

# the index still answers: rows kept and rows added each find themselves
is( $node->safe_psql(
		'postgres', q{
SET enable_seqscan = off;
SELECT count(*) FILTER (WHERE (SELECT o.id FROM t o ORDER BY o.v <-> s.v LIMIT 1) = s.id)
       || ' of ' || count(*)
  FROM t s WHERE s.id % 80 = 0}),
	'45 of 45', 'every sampled row finds itself');
$node->safe_psql('postgres', 'VACUUM t');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server is up after a second VACUUM');

$node->stop;
done_testing();
