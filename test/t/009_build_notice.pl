# Copyright: gateann authors.
#
# The build measures its graph's recall and, when it is under 0.95, raises a
# NOTICE whose hint says what to rebuild with: twice max_neighbors, and a
# build list of twice that when the index was built with a shorter one (a
# wider graph built with the same list gains less).  The advice must be
# worth following: an index rebuilt with it measures a higher recall.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $node = gateann_node('main');

# Uniform rows in 64 dimensions: few neighbors per node do not navigate them.
$node->safe_psql('postgres', q{
SELECT setseed(0.5);
CREATE TABLE t (id int PRIMARY KEY, embedding real[]);
} . random_vectors_sql('t', 3000, 64) . q{
ANALYZE t;
});

# Build an index WITH ($with); return the build's HINT (or '') and the
# build_recall it kept.
sub build
{
	my ($name, $with) = @_;
	my ($stdout, $stderr);

	$node->psql('postgres',
		"CREATE INDEX $name ON t USING gateann (embedding) WITH ($with)",
		stdout => \$stdout, stderr => \$stderr, on_error_die => 1);
	my $recall = $node->safe_psql('postgres',
		"SELECT build_recall FROM gateann_index_info('$name')");
	$node->safe_psql('postgres', "DROP INDEX $name");
	my ($hint) = $stderr =~ /^HINT:\s+(.*)$/m;
	return ($hint // '', $recall);
}

# A short build list: the hint doubles both.
my ($hint, $narrow) = build('short_list', 'max_neighbors = 8, build_search_list_size = 16');
cmp_ok($narrow, '<', 0.95, "8 neighbors, a build list of 16: build_recall $narrow");
like($hint, qr/rebuild the index WITH \(max_neighbors = 16, build_search_list_size = 32\)/i,
	'the hint names twice the neighbors and a build list of twice that');

# Rebuild with the options the hint names, as a user would copy them.
my ($advice) = $hint =~ /WITH \(([^)]*)\)/;
my (undef, $advised) = build('advised', $advice // 'no advice');
cmp_ok($advised, '>', $narrow + 0.05,
	"rebuilt as the hint says: build_recall $advised against $narrow");

# The default build list (128) is long enough for 16: only the neighbors.
($hint, my $default_list) = build('default_list', 'max_neighbors = 8');
cmp_ok($default_list, '<', 0.95, "8 neighbors, the default build list: build_recall $default_list");
like($hint, qr/rebuild the index WITH \(max_neighbors = 16\)/i,
	'the hint names twice the neighbors alone');

$node->stop;
done_testing();
