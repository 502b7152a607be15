# Copyright: gateann authors.
#
# Scans read node records straight from the index file.  A page read while
# it is being written out can come back part old, part new: the page header
# and the record's node id new, its vector or filter copies old.  Every
# record carries a check of what is written once per slot incarnation; a
# scan that reads a copy failing it takes the buffer manager's copy instead,
# and when that one fails too, the index is damaged and the scan says so.
#
# A torn read cannot be had on demand.  This test stands in for one: it
# changes a record's vector in the file while the server runs and shared
# buffers hold the page as it was, so the file gives the scan what a torn
# read would (header, LSN and node id right, the vector not).  Without the
# check, the scan ranks the row by the vector it read and the first query
# below does not return it.  Data checksums are off: with them, the page's
# checksum would catch the change first.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $node = gateann_node('record_check', checksums => 0, preload => 1);
$node->safe_psql('postgres', qq{
SELECT setseed(0.5);
CREATE TABLE t (id int, v real[]) WITH (autovacuum_enabled = off);
@{[ random_vectors_sql('t', 2000, 16) ]}
CREATE INDEX t_idx ON t USING gateann (v);
});
# Pages the file does not have yet are read through shared buffers anyway
# (their LSN is behind the store's marks): write them all out first.
$node->safe_psql('postgres', 'CHECKPOINT');

# Row 7 as its own nearest row, and how many record pages that scan took
# from shared buffers rather than the file.  (io_uring reads the file for
# every record: auto would copy the pages shared buffers hold.)
my $query = q{SET enable_seqscan = off; SET gateann.io_method = io_uring;
SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 7) LIMIT 1;
SELECT buffer_hits FROM gateann_last_scan();};

is($node->safe_psql('postgres', $query), "7\n0",
	'row 7 comes first, every record read from the file');
# (gateann_verify also reads every node page into shared buffers)
is($node->safe_psql('postgres', q{SELECT count(*) FROM gateann_verify('t_idx')}), '0',
	'the index verifies clean');

# Find row 7's vector in the file by its bytes and change it there.
my @v = split /,/, $node->safe_psql('postgres',
	q{SELECT array_to_string(v, ',') FROM t WHERE id = 7});
is(scalar(@v), 16, 'row 7 has 16 components');
my $path = $node->data_dir . '/' .
  $node->safe_psql('postgres', q{SELECT pg_relation_filepath('t_idx')});
open(my $fh, '+<', $path) or die "open $path: $!";
binmode $fh;
my $file = do { local $/; <$fh> };
my $pos = index($file, pack('f<*', @v));
cmp_ok($pos, '>', 0, 'row 7\'s record is in the file');
is(index($file, pack('f<*', @v), $pos + 1), -1, 'once');
seek($fh, $pos, 0);
print $fh pack('f<*', (100.0) x 16);
close $fh;

# The page in shared buffers is the one written; the file's is not.
my ($hit, $buffer_pages) = split /\n/, $node->safe_psql('postgres', $query);
is($hit, '7', 'row 7 still comes first: the scan used the buffer manager\'s copy');
cmp_ok($buffer_pages, '>=', 1, "the record was read again through shared buffers ($buffer_pages pages)");

# After a restart shared buffers hold nothing: both copies are damaged.
$node->restart;
my ($ret, $out, $err) = $node->psql('postgres', $query,
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'a scan that reaches the damaged record fails');
like($err,
	qr/XX002: gateann index "t_idx" is damaged: the record of node \d+ does not match its check/,
	'naming the index and the record (ERRCODE_INDEX_CORRUPTED)');
like($err, qr/REINDEX/, 'the error says how to repair it');
like($node->safe_psql('postgres', q{SELECT string_agg(p, '; ') FROM gateann_verify('t_idx') p}),
	qr/^node \d+: record does not match its check/, 'gateann_verify reports the record');

$node->safe_psql('postgres', 'REINDEX INDEX t_idx');
$node->safe_psql('postgres', 'CHECKPOINT');
is($node->safe_psql('postgres', $query), "7\n0", 'REINDEX repairs it');
is($node->safe_psql('postgres', q{SELECT count(*) FROM gateann_verify('t_idx')}), '0',
	'and it verifies clean');

$node->stop;
done_testing();
