# Copyright: gateann authors.
#
# A crash (immediate stop) while CREATE INDEX is building the graph: after
# restart the table works, no half-built index is left, and building the
# index again gives an index that verifies clean and finds every row.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $node = gateann_node('midway');
$node->safe_psql('postgres', qq{
SELECT setseed(0.1);
CREATE TABLE t (id int PRIMARY KEY, v real[]);
@{[ random_vectors_sql('t', 40000, 64) ]}
});

my $builder = $node->background_psql('postgres', on_error_stop => 0);
$builder->query_until(qr/start/, q{\echo start
CREATE INDEX t_idx ON t USING gateann (v);
});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_progress_create_index WHERE phase LIKE '%building graph%'}),
	'build reached the graph phase');
$node->stop('immediate');
eval { $builder->quit; };
$node->start;

is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 't_idx'}), '0',
	'no half-built index after the crash');
is($node->safe_psql('postgres', q{SELECT count(*) FROM t}), '40000', 'table intact');

$node->safe_psql('postgres', q{CREATE INDEX t_idx ON t USING gateann (v)});
is($node->safe_psql('postgres', q{SELECT count(*) FROM gateann_verify('t_idx')}), '0',
	'rebuilt index verifies clean');
is($node->safe_psql('postgres', q{SET enable_seqscan = off;
SELECT count(*) FILTER (WHERE (SELECT o.id FROM t o ORDER BY o.v <-> s.v LIMIT 1) = s.id)
  FROM t s WHERE s.id % 2000 = 0}), '20', 'rebuilt index finds sampled rows');

$node->stop;
done_testing();
