# Copyright: gateann authors.
#
# Without shared_preload_libraries every backend keeps a private copy of the
# stores, whose marks (which blocks the files lag behind shared buffers on)
# only know that backend's own writes.  Scans there read records through
# the buffer manager, so writers never force their pages out under a buffer
# lock; another backend whose copy was loaded before the writes still finds
# every new row, in new slots and in slots VACUUM freed.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $node = gateann_node('private_writes', conf => "checkpoint_timeout = '1h'");

$node->safe_psql('postgres', qq{
SELECT setseed(0.5);
CREATE TABLE t (id int PRIMARY KEY, v real[]);
@{[ random_vectors_sql('t', 3000, 16) ]}
CREATE INDEX t_idx ON t USING gateann (v);
CHECKPOINT;
});

# buffers written out by client backends themselves, cluster-wide
my $backend_writes_sql = $node->pg_version >= 16
  ? q{SELECT coalesce(sum(writes), 0) FROM pg_stat_io WHERE backend_type = 'client backend'}
  : q{SELECT buffers_backend FROM pg_stat_bgwriter};

# a reader whose private copy predates every write below
my $reader = $node->background_psql('postgres');
$reader->query_safe(q{SET enable_seqscan = off});
$reader->query_safe(q{SET client_min_messages = warning});	# (the private-copy NOTICE)
is($reader->query_safe(q{SELECT loaded, shared FROM gateann_index_info('t_idx')}), 'f|f',
	'no store yet');
is($reader->query_safe(q{SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 9) LIMIT 1}),
	'9', 'reader loaded its private copy');

my $writes_before = $node->safe_psql('postgres', $backend_writes_sql);

# 300 rows, one statement each: every insert changes the new record's pages
# and its neighbors'
$node->safe_psql('postgres', single_row_inserts_sql('t', 10000, 300, 16));
my $writes_after = $node->safe_psql('postgres', $backend_writes_sql);
cmp_ok($writes_after - $writes_before, '<', 30,
	'inserts force no pages out (' . ($writes_after - $writes_before) . ' backend writes)');

# rows with an id above $from that their own vector does not find first
sub missed_sql
{
	my $from = shift;
	return "SELECT count(*) FROM t n WHERE n.id > $from "
	  . "AND n.id <> (SELECT id FROM t ORDER BY v <-> n.v LIMIT 1)";
}
is($reader->query_safe(missed_sql(10000)), '0', 'the older private copy finds every new row');

# rows into slots VACUUM freed
$node->safe_psql('postgres', q{DELETE FROM t WHERE id % 7 = 0 AND id < 10000});
$node->safe_psql('postgres', q{VACUUM t});
$node->safe_psql('postgres', single_row_inserts_sql('t', 20000, 200, 16));
is($reader->query_safe(missed_sql(20000)), '0', 'and every row in a reused slot');
is($reader->query_safe(q{SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 14) LIMIT 10) s WHERE id % 7 = 0 AND id < 10000}),
	'0', 'no deleted row comes back');
is($node->safe_psql('postgres', q{SELECT count(*) FROM gateann_verify('t_idx')}), '0',
	'gateann_verify finds no problem');

$reader->quit;
$node->stop;
done_testing();
