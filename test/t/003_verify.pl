# Copyright: gateann authors.
#
# gateann_verify finds a damaged record: overwrite the node id of node 0 in
# the index's file while the server is down, then check what it reports.
# These checks are what stands between damage and a wrong answer when data
# checksums are off (initdb's default before PostgreSQL 18), so the node is
# made without them; the last section has them on.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

# The first node page of the open index file $fh: its block number and its
# bytes.  A node page's special space (its last 8 bytes) says "GATE", kind 3.
sub first_node_page
{
	my ($fh) = @_;
	my ($block, $page) = (0, '');
	seek($fh, 0, 0);
	while (read($fh, $page, 8192) == 8192)
	{
		my ($magic, $kind) = unpack('V v', substr($page, 8192 - 8, 6));
		return ($block, $page) if $magic == 0x47415445 && $kind == 3;
		$block++;
	}
	die "no node page in the index file";
}

my $node = gateann_node('verify', checksums => 0);
$node->safe_psql('postgres', qq{
SELECT setseed(0.5);
CREATE TABLE t (id int, v real[]);
@{[ random_vectors_sql('t', 500, 16) ]}
CREATE INDEX t_idx ON t USING gateann (v);
});
is($node->safe_psql('postgres', q{SELECT count(*) FROM gateann_verify('t_idx')}), '0',
	'a fresh index verifies clean');

# node 0 starts right after the page header of the first node page
my $path = $node->data_dir . '/' .
  $node->safe_psql('postgres', q{SELECT pg_relation_filepath('t_idx')});
$node->stop;
open(my $fh, '+<', $path) or die "open $path: $!";
binmode $fh;
my ($block, $page) = first_node_page($fh);
seek($fh, $block * 8192 + 24, 0);
print $fh pack('V', 12345);
close $fh;
$node->start;

is($node->safe_psql('postgres', q{SELECT string_agg(p, '; ') FROM gateann_verify('t_idx') p}),
	'node 0: record holds node id 12345', 'gateann_verify reports the damaged record');

# A metapage that names an entry point past the last node (one 4-byte
# write): every scan and verify refuse the index with an error naming it,
# never a crash.  The entry point is the 14th 4-byte field of the metapage
# contents, which start after the 24-byte page header of block 0.
$node->safe_psql('postgres', q{REINDEX INDEX t_idx});
$path = $node->data_dir . '/' .
  $node->safe_psql('postgres', q{SELECT pg_relation_filepath('t_idx')});
my $nodes = $node->safe_psql('postgres', q{SELECT nodes FROM gateann_index_info('t_idx')});
$node->stop;
open($fh, '+<', $path) or die "open $path: $!";
binmode $fh;
my $field = '';
seek($fh, 24 + 52, 0);
read($fh, $field, 4);
cmp_ok(unpack('V', $field), '<', $nodes, 'the entry point is a node');
seek($fh, 24 + 52, 0);
print $fh pack('V', $nodes + 1000);
close $fh;
$node->start;

my ($ret, $out, $err) = $node->psql('postgres',
	q{SET enable_seqscan = off; SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 7) LIMIT 3},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'a scan of the damaged index fails');
like($err, qr/XX002: gateann index "t_idx" is damaged: its metapage gives entry point/,
	'the error names the index and the damage (ERRCODE_INDEX_CORRUPTED)');
like($err, qr/REINDEX/, 'the error says how to repair it');
is($node->safe_psql('postgres', q{SELECT 1}), '1', 'the server did not crash');
like($node->safe_psql('postgres', q{SELECT string_agg(p, '; ') FROM gateann_verify('t_idx') p}),
	qr/metapage gives entry point/, 'gateann_verify reports the damaged metapage');
$node->safe_psql('postgres', q{REINDEX INDEX t_idx});
is($node->safe_psql('postgres', q{SET enable_seqscan = off;
SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 7) LIMIT 1}), '7',
	'REINDEX repairs it');

# A metapage whose metric (the 6th 4-byte field) is not the operator
# class's: the index would rank by inner product while the executor checks
# each row's L2 distance against it, and fail with an internal error ("index
# returned tuples in wrong order").  The scan must refuse it as damage.
$path = $node->data_dir . '/' .
  $node->safe_psql('postgres', q{SELECT pg_relation_filepath('t_idx')});
$node->stop;
open($fh, '+<', $path) or die "open $path: $!";
binmode $fh;
seek($fh, 24 + 20, 0);
read($fh, $field, 4);
is(unpack('V', $field), 1, 'the metric is L2 (1)');
seek($fh, 24 + 20, 0);
print $fh pack('V', 2);
close $fh;
$node->start;
($ret, $out, $err) = $node->psql('postgres',
	q{SET enable_seqscan = off; SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 7) LIMIT 10},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'a scan of an index with another metric fails');
like($err, qr/XX002: gateann index "t_idx" is damaged: its metapage gives metric inner_product, its operator class orders by l2/,
	'the error names the index and the damage (ERRCODE_INDEX_CORRUPTED)');
like($node->safe_psql('postgres', q{SELECT string_agg(p, '; ') FROM gateann_verify('t_idx') p}),
	qr/metapage gives metric inner_product, the operator class's is l2/,
	'gateann_verify reports the metric');
$node->safe_psql('postgres', q{REINDEX INDEX t_idx});
is($node->safe_psql('postgres', q{SET enable_seqscan = off;
SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 7) LIMIT 1}), '7',
	'REINDEX repairs it');

# Damage the metapage of tf_idx with the server down: find int4's OID (23)
# followed by its typlen (4), the first filter column's entry, and write
# $bytes at $delta from it.  Returns the entry's bytes before the write.
sub damage_filter_column
{
	my ($delta, $bytes) = @_;
	my $file = $node->data_dir . '/' .
	  $node->safe_psql('postgres', q{SELECT pg_relation_filepath('tf_idx')});
	$node->stop;
	open(my $f, '+<', $file) or die "open $file: $!";
	binmode $f;
	my $meta = '';
	read($f, $meta, 8192);
	my $pos = index($meta, pack('V s', 23, 4), 24);
	die "no int4 filter column in the metapage of tf_idx" if $pos <= 24;
	seek($f, $pos + $delta, 0);
	print $f $bytes;
	close $f;
	$node->start;
	return substr($meta, $pos, 16);
}

sub scan_error
{
	my ($r, $o, $e) = $node->psql('postgres',
		q{SET enable_seqscan = off; SELECT id FROM tf WHERE a = 3 ORDER BY v <-> (SELECT v FROM t WHERE id = 7) LIMIT 3},
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return $e;
}

# The type of a filter column as the metapage records it decides how its
# copies are read: one changed to 0 (the damage the fuzz harness found gave
# "cache lookup failed for type 0") is refused as damage like any other.
$node->safe_psql('postgres', q{
CREATE TABLE tf (id int, v real[], a int);
INSERT INTO tf SELECT id, v, id % 10 FROM t;
CREATE INDEX tf_idx ON tf USING gateann (v, a);
});
damage_filter_column(0, pack('V', 0));
like(scan_error(),
	qr/XX002: gateann index "tf_idx" is damaged: its metapage gives filter column 2 a type other than its own/,
	'a filter column type that is not the column\'s is damage');
like($node->safe_psql('postgres', q{SELECT string_agg(p, '; ') FROM gateann_verify('tf_idx') p}),
	qr/filter column 2 a type other than its own/, 'gateann_verify reports it');

# The same for how the filter store keeps the column: an int4 column said
# to hold Bloom bits (an array's) is damage, not an element type of 0.
# After typid (4), typlen (2), typbyval, typalign, offset (2), width (2): kind.
$node->safe_psql('postgres', q{REINDEX INDEX tf_idx});
my $entry = damage_filter_column(12, pack('C', 2));
is(unpack('C', substr($entry, 12, 1)), 1, 'the kind was scalar');
like(scan_error(),
	qr/XX002: gateann index "tf_idx" is damaged: its metapage gives filter column 2 a kind other than its type's/,
	'a filter column kind other than its type\'s is damage');

# A metapage that points a text column's dictionary at the int column's
# entries (filter[1].dict_offset := 0, 40 bytes after filter[0]'s start; the
# fuzz harness found it): the loader read int entries as text lengths, and a
# text comparison copied that many bytes onto the stack (SIGSEGV).  Every
# dictionary is checked when it is read.
$node->safe_psql('postgres', q{
DROP INDEX tf_idx;
ALTER TABLE tf ADD COLUMN b text;
UPDATE tf SET b = (ARRAY['alpha', 'beta', 'gamma', 'delta', 'epsilon'])[id % 5 + 1];
CREATE INDEX tf_idx ON tf USING gateann (v, a, b);
});
damage_filter_column(40, pack('V', 0));
like(scan_error(),
	qr/XX002: gateann index "tf_idx" is damaged: entry 0 of the dictionary of filter column 3 is damaged/,
	'a dictionary offset pointing at another column\'s entries is damage, not a crash');
like($node->safe_psql('postgres', q{SELECT string_agg(p, '; ') FROM gateann_verify('tf_idx') p}),
	qr/dictionaries: entry 0 of the dictionary of filter column 3 is damaged/,
	'gateann_verify reports it');
$node->safe_psql('postgres', q{REINDEX INDEX tf_idx});
is($node->safe_psql('postgres', q{SELECT count(*) FROM gateann_verify('tf_idx')}), '0',
	'REINDEX repairs it');

# A record whose heap TID points past the table (bytes damaged without
# checksums; test/fuzz found it): a scan that reaches it fails naming the
# index, not with the storage layer's "could not open file ... previous
# segment is only N blocks" (XX000).  The TID follows the node id and the
# version in the record header: block number (two 16-bit halves), offset.
# The record's check (bytes 20-23, a CRC-32C of the header's first 14 bytes
# and the vector from byte 24) catches the damage first; with the check
# made to match, the TID itself is what the scan refuses.
$node->safe_psql('postgres', q{REINDEX INDEX t_idx});
$path = $node->data_dir . '/' .
  $node->safe_psql('postgres', q{SELECT pg_relation_filepath('t_idx')});

# Damage node 0's heap TID with the server down; with $seal, set its check
# to match.
sub damage_tid
{
	my ($seal) = @_;
	$node->stop;
	open(my $f, '+<', $path) or die "open $path: $!";
	binmode $f;
	my ($blk, $pg) = first_node_page($f);
	my $rec = substr($pg, 24, 24 + 16 * 4);
	substr($rec, 8, 6) = pack('v v v', 0xD0E9, 0x1234, 1);
	substr($rec, 20, 4) = pack('V', crc32c(substr($rec, 0, 14) . substr($rec, 24)))
	  if $seal;
	seek($f, $blk * 8192 + 24, 0);
	print $f $rec;
	close $f;
	$node->start;
}

sub far_scan_error
{
	my ($r, $o, $e) = $node->psql('postgres',
		q{SET enable_seqscan = off; SET gateann.search_list_size = 600;
SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 7) LIMIT 500) s},
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return $e;
}

damage_tid(0);
like(far_scan_error(), qr/XX002: gateann index "t_idx" is damaged: the record of node 0 does not match its check/,
	'a damaged heap TID fails the record\'s check');
damage_tid(1);
like(far_scan_error(), qr/XX002: gateann index "t_idx" is damaged: node 0 points to heap TID \(3504935476,1\), outside its table/,
	'a heap TID past the table is damage, named as such, check or not');
like($node->safe_psql('postgres', q{SELECT string_agg(p, '; ') FROM gateann_verify('t_idx') p}),
	qr/node 0: heap TID \(3504935476,1\) beyond the table/, 'gateann_verify reports it');

# A PQ code that does not code its vector (the record's check does not
# cover the code, which retraining rewrites): node 0's first subspace byte
# made to name another centroid.  gateann_verify reports it; the record
# layout (page.h) puts the code after the vector and max_neighbors ids.
$node->safe_psql('postgres', q{REINDEX INDEX t_idx; CHECKPOINT;});
$path = $node->data_dir . '/' .
  $node->safe_psql('postgres', q{SELECT pg_relation_filepath('t_idx')});
my ($dims, $max_neighbors) = split /\|/,
  $node->safe_psql('postgres', q{SELECT dims, max_neighbors FROM gateann_index_info('t_idx')});
is($node->safe_psql('postgres', q{SELECT count(*) FROM gateann_verify('t_idx')}), '0',
	'rebuilt: verifies clean, every code its vector\'s');
$node->stop;
{
	open(my $f, '+<', $path) or die "open $path: $!";
	binmode $f;
	my ($blk) = first_node_page($f);
	my $at = $blk * 8192 + 24 + 24 + 4 * $dims + 4 * $max_neighbors;
	my $byte;
	seek($f, $at, 0);
	read($f, $byte, 1);
	seek($f, $at, 0);
	print $f pack('C', (unpack('C', $byte) + 128) % 256);
	close $f;
}
$node->start;
like($node->safe_psql('postgres', q{SELECT string_agg(p, '; ') FROM gateann_verify('t_idx') p}),
	qr/node 0: its PQ code names centroid \d+ of subspace 0 at squared distance [0-9.e+-]+, another is at/,
	'gateann_verify reports a code that does not code its vector');

# A jsonb filter value whose container header is damaged (bytes damaged
# without checksums; test/fuzz found it): the loader, coding the filter
# store from the records, handed it to the jsonb iterator, which failed
# with "unknown type of jsonb container" (XX000) or read past the copy.
# A record's jsonb copy is checked before any jsonb function sees it.
# In the record: a uint32 length, the varlena header, the container header
# (count 1, an object), two entries, then "marker" and its value.
$node->safe_psql('postgres', q{
CREATE TABLE tj (id int, v real[], m jsonb) WITH (autovacuum_enabled = off);
INSERT INTO tj SELECT id, v, jsonb_build_object('k', id % 5) FROM t;
UPDATE tj SET m = '{"marker": "qqqqqqqqqqqq"}' WHERE id = 7;
CREATE INDEX tj_idx ON tj USING gateann (v, m);
CHECKPOINT;
});
$path = $node->data_dir . '/' .
  $node->safe_psql('postgres', q{SELECT pg_relation_filepath('tj_idx')});
$node->stop;
open(my $jf, '+<', $path) or die "open $path: $!";
binmode $jf;
my $jfile = do { local $/; <$jf> };
my $jpos = index($jfile, 'markerqqqqqqqqqqqq');
cmp_ok($jpos, '>', 12, 'the jsonb value is in the index file');
is(unpack('V', substr($jfile, $jpos - 12, 4)), 0x20000001, 'after its container header');
seek($jf, $jpos - 12, 0);
print $jf pack('V', 0x2000FFFF);	# 65535 keys
close $jf;
$node->start;
($ret, $out, $err) = $node->psql('postgres',
	q{SET enable_seqscan = off;
SELECT id FROM tj WHERE m @> '{"k": 2}' ORDER BY v <-> (SELECT v FROM t WHERE id = 7) LIMIT 3},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/XX002: gateann index "tj_idx": a record's copy of filter column 2 is damaged/,
	'a damaged jsonb copy is damage, named as such');
is($node->safe_psql('postgres', q{SELECT 1}), '1', 'the server did not crash');
$node->safe_psql('postgres', q{REINDEX INDEX tj_idx});
is($node->safe_psql('postgres',
	q{SET enable_seqscan = off; SELECT id FROM tj WHERE m ? 'marker' ORDER BY v <-> (SELECT v FROM t WHERE id = 7) LIMIT 1}),
	'7', 'REINDEX repairs it');

$node->stop;

# With data checksums, a damaged vector component fails the page's
# checksum, and every reader must refuse the page with PostgreSQL's own
# error (XX001) rather than rank rows by it.  The loader reads node pages
# through a bulk-read ring (an eighth of shared buffers at most: 8 buffers
# here), so once the stores are loaded after a restart, the early node
# pages are out of shared buffers: a scan then reads them from the file and
# checks the checksum itself (handing a page that fails to the buffer
# manager, which refuses it) before the record's check.  (No autovacuum: a
# VACUUM could rewrite the damaged page from its buffer.)
my $cnode = gateann_node('verify_checksums', checksums => 1, preload => 1,
	conf => "shared_buffers = '512kB'");
is($cnode->safe_psql('postgres', 'SHOW data_checksums'), 'on', 'data checksums are on');
$cnode->safe_psql('postgres', qq{
SELECT setseed(0.5);
CREATE TABLE t (id int, v real[]) WITH (autovacuum_enabled = off);
@{[ random_vectors_sql('t', 2000, 16) ]}
CREATE INDEX t_idx ON t USING gateann (v);
});
$cnode->restart;
cmp_ok($cnode->safe_psql('postgres', q{SELECT gateann_prewarm('t_idx')}), '>', 0,
	'the stores are loaded');
$path = $cnode->data_dir . '/' .
  $cnode->safe_psql('postgres', q{SELECT pg_relation_filepath('t_idx')});
open($fh, '+<', $path) or die "open $path: $!";
binmode $fh;
($block, $page) = first_node_page($fh);
# node 0's record: node id, version, heap TID (block in two halves, offset),
# flags, neighbor count, check, then from byte 24 its vector
my ($hi, $lo, $off) = unpack('v v v', substr($page, 24 + 8, 6));
my $tid = '(' . ($hi * 65536 + $lo) . ",$off)";
seek($fh, $block * 8192 + 24 + 24, 0);
print $fh pack('f', 1.0e30);
close $fh;
my $query = qq{SET enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE ctid = '$tid') LIMIT 10) s};
($ret, $out, $err) = $cnode->psql('postgres', $query,
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'a scan that reads a page failing its checksum from the file fails');
like($err, qr/XX001: invalid page in block $block of relation/,
	'with PostgreSQL\'s error for a damaged page');
$cnode->restart;
($ret, $out, $err) = $cnode->psql('postgres', $query,
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/XX001: invalid page in block $block of relation/,
	'after a restart, loading the stores meets the same error');
($ret, $out, $err) = $cnode->psql('postgres',
	q{SELECT count(*) FROM gateann_verify('t_idx')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/XX001: invalid page in block $block of relation/,
	'so does gateann_verify');
is($cnode->safe_psql('postgres', q{SELECT 1}), '1', 'the server did not crash');
$cnode->stop;
done_testing();
