# Copyright: gateann authors.
#
# gateann_verify finds a damaged record: overwrite the node id of node 0 in
# the index's file while the server is down, then check what it reports.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('verify');
$node->init;
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION gateann;
SELECT setseed(0.5);
CREATE TABLE t (id int, v real[]);
INSERT INTO t SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 16) WHERE i > 0)
  FROM generate_series(1, 500) i;
CREATE INDEX t_idx ON t USING gateann (v);
});
is($node->safe_psql('postgres', q{SELECT count(*) FROM gateann_verify('t_idx')}), '0',
	'a fresh index verifies clean');

# node 0 starts right after the page header of the first node page: the
# first page whose special space (its last 8 bytes) says "GATE", kind 3
my $path = $node->data_dir . '/' .
  $node->safe_psql('postgres', q{SELECT pg_relation_filepath('t_idx')});
$node->stop;
open(my $fh, '+<', $path) or die "open $path: $!";
binmode $fh;
my ($block, $page) = (0, '');
while (read($fh, $page, 8192) == 8192)
{
	my ($magic, $kind) = unpack('V v', substr($page, 8192 - 8, 6));
	last if $magic == 0x47415445 && $kind == 3;
	$block++;
}
seek($fh, $block * 8192 + 24, 0);
print $fh pack('V', 12345);
close $fh;
$node->start;

is($node->safe_psql('postgres', q{SELECT string_agg(p, '; ') FROM gateann_verify('t_idx') p}),
	'node 0: record holds node id 12345', 'gateann_verify reports the damaged record');

$node->stop;
done_testing();
