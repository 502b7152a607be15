# Copyright: gateann authors.
#
# gateann.io_method = auto takes each record from the cheapest place that
# holds it: shared buffers, then the kernel's page cache, then the device
# (io_uring, O_DIRECT); an index small enough for shared buffers (a quarter
# of them) is read into them instead, and stays there.  The rows are the
# same whichever it was, and gateann_last_scan() says where the pages came
# from.  gateann.page_search = auto reuses, for such an index, the pages a
# scan read (page_hits), without changing its rows.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

# shared buffers too small for the index: memory it finds, else the device
my $node = gateann_node('sources', preload => 1, conf => "shared_buffers = '16MB'");

$node->safe_psql('postgres', indexed_items_sql(0.5, 20000, 32, 2000));

# rows of every query (id lists), and the summed counters of their scans
sub run_queries
{
	my ($method, $pages) = @_;
	$pages //= 'auto';
	my $out = $node->safe_psql('postgres', qq{
SET enable_seqscan = off; SET gateann.io_method = '$method';
SET gateann.page_search = '$pages';
CREATE TEMP TABLE r (q int, ids text, reads bigint, resident bigint, cached bigint, buffer bigint,
                     page_hits bigint);
DO \$\$
DECLARE qr record; ids text; s record;
BEGIN
  FOR qr IN SELECT q, v FROM queries ORDER BY q LOOP
    SELECT string_agg(id::text, ',') INTO ids
      FROM (SELECT id FROM items ORDER BY v <-> qr.v LIMIT 10) t;
    SELECT * INTO s FROM gateann_last_scan();
    INSERT INTO r VALUES (qr.q, ids, s.reads, s.resident_hits, s.page_cache_hits, s.buffer_hits,
                          s.page_hits);
  END LOOP;
END \$\$;
SELECT string_agg(ids, ';' ORDER BY q), sum(reads), sum(resident), sum(cached), sum(buffer),
       sum(page_hits) FROM r;});
	my ($rows, $reads, $resident, $cached, $buffer, $page_hits) = split /\|/, $out;
	return { rows => $rows, reads => $reads, resident => $resident, cached => $cached,
		buffer => $buffer, page_hits => $page_hits };
}

# evict the index's file from the kernel's page cache (its owner may; dirty
# pages stay, so write them out first)
sub drop_page_cache
{
	my $path = $node->data_dir . '/' .
	  $node->safe_psql('postgres', q{SELECT pg_relation_filepath('items_idx')});
	system('python3', '-c',
		"import os\nfd = os.open('$path', os.O_RDONLY)\nos.fsync(fd)\nos.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)")
	  == 0 or die "posix_fadvise failed";
}

my $buffer = run_queries('buffer');
cmp_ok($buffer->{buffer}, '>', 0, 'the buffer method copies pages through shared buffers');

# after the build the index's pages are in shared buffers
my $warm = run_queries('auto');
is($warm->{rows}, $buffer->{rows}, 'auto returns the rows of the buffer method');
cmp_ok($warm->{resident}, '>', 0, 'pages shared buffers hold are copied from there');
is($warm->{reads}, '0', 'and not read from the device');

# a restart empties shared buffers; the page cache keeps the file
$node->restart;
my $cached = run_queries('auto');
is($cached->{rows}, $buffer->{rows}, 'the same rows from the page cache');
cmp_ok($cached->{cached}, '>', 0, 'pages the page cache holds are read from there');

# neither holds them: the device (the store's load reads every node page
# through shared buffers, with a small ring, and the page cache: drop the
# file from it after the load)
$node->restart;
$node->safe_psql('postgres', q{SELECT gateann_prewarm('items_idx')});
drop_page_cache();
my $cold = run_queries("auto");
is($cold->{rows}, $buffer->{rows}, 'the same rows from the device');
cmp_ok($cold->{reads}, '>', 0, 'pages nothing holds are read from the file');

my $uring = run_queries('io_uring');
is($uring->{rows}, $buffer->{rows}, 'io_uring, which always reads the file, agrees');
is($uring->{resident} + $uring->{cached}, 0, 'and takes nothing from memory');

# page_search = auto reused pages in every run above; off reads every record
cmp_ok($uring->{page_hits}, '>', 0, 'auto takes records from pages the scan read');
my $unpaged = run_queries('io_uring', 'off');
is($unpaged->{rows}, $buffer->{rows}, 'and returns the rows of a scan that reads them all');
is($unpaged->{page_hits}, '0', 'off takes none');
cmp_ok($unpaged->{reads}, '>', $uring->{reads}, 'and reads more');

# --- a cacheable index: what no memory holds is read into shared buffers ---------------------------
$node->append_conf('postgresql.conf', "shared_buffers = '128MB'");
$node->restart;
$node->safe_psql('postgres', q{SELECT gateann_prewarm('items_idx')});
drop_page_cache();
my $first = run_queries('auto');
is($first->{rows}, $buffer->{rows}, 'a cacheable index gives the same rows');
cmp_ok($first->{buffer}, '>', 0, 'its pages are read through shared buffers');
is($first->{reads} + $first->{cached}, 0, 'not by the file reader');
my $again = run_queries('auto');
is($again->{buffer} + $again->{reads} + $again->{cached}, 0,
	'and then shared buffers hold them all');
cmp_ok($again->{resident}, '>', 0, 'every page comes from there');
is($again->{page_hits}, '0', 'page_search = auto: not for an index read into shared buffers');

$node->stop;
done_testing();
