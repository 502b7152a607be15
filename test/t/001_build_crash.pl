# Copyright: gateann authors.
#
# Build a gateann index, crash the server (immediate stop), restart, and check that the index
# still finds every sampled row as its own nearest neighbour through an Index Scan.  Then check
# that a streaming standby, which received the index through WAL only, answers like the primary.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $nrows = 5000;
my $dims  = 16;

# Replay of generic WAL records is checked against full-page images on the standby and in
# crash recovery.
my $primary = gateann_node('primary', streaming => 1);

# Standby from a backup taken before the table exists: it gets the index only through WAL.
my $standby = gateann_standby($primary, 'standby');

$primary->safe_psql('postgres', qq{
SELECT setseed(0.5);
CREATE TABLE t (id int PRIMARY KEY, embedding real[]);
@{[ random_vectors_sql('t', $nrows, $dims) ]}
CREATE INDEX t_gateann_idx ON t USING gateann (embedding);
});

# Crash and recover.
$primary->stop('immediate');
$primary->start;

is($primary->safe_psql('postgres', 'SELECT count(*) FROM t'), $nrows, 'table intact after crash');

sub nn_query
{
	my ($x, $k) = @_;
	return "SELECT id FROM t ORDER BY embedding <-> (SELECT embedding FROM t WHERE id = $x) LIMIT $k";
}

my $explain = $primary->safe_psql('postgres',
	'SET enable_seqscan = off; EXPLAIN (COSTS OFF) ' . nn_query(1, 1));
like($explain, qr/Index Scan using t_gateann_idx/, 'nearest-neighbour query uses the gateann index')
  or diag($explain);

my @sample = map { 1 + (($_ * 997) % $nrows) } 0 .. 19;
my $found = 0;
foreach my $x (@sample)
{
	my $got = $primary->safe_psql('postgres', 'SET enable_seqscan = off; ' . nn_query($x, 1));
	if ($got eq $x) { $found++; }
	else { diag("row $x: nearest neighbour returned '$got'"); }
}
is($found, scalar(@sample), 'every sampled row is its own nearest neighbour after crash recovery');

# Standby: same plan, same answers.
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

is($standby->safe_psql('postgres', 'SELECT count(*) FROM t'), $nrows, 'standby has the table');
$explain = $standby->safe_psql('postgres',
	'SET enable_seqscan = off; EXPLAIN (COSTS OFF) ' . nn_query(1, 1));
like($explain, qr/Index Scan using t_gateann_idx/, 'standby uses the gateann index')
  or diag($explain);

foreach my $x (@sample[0 .. 9])
{
	my $sql = 'SET enable_seqscan = off; ' . nn_query($x, 10);
	my $p = $primary->safe_psql('postgres', $sql);
	my $s = $standby->safe_psql('postgres', $sql);
	is($s, $p, "standby returns the same 10 rows as the primary for row $x");
}

$standby->stop;
$primary->stop;

done_testing();
