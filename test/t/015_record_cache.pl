# Copyright: gateann authors.
#
# The shared record cache (gateann.record_cache_size): records scans read
# from the files are kept in shared memory and served to later scans of any
# backend without a read.  A copy must never be used once the record
# changed: after deletes, VACUUM (which rewrites neighbor lists and frees
# slots) and inserts that reuse the freed slots, scans with the cache return
# exactly the rows of scans without it.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

# shared buffers hold a quarter of the index at most: it is read from the files
my $node = gateann_node('record_cache', preload => 1,
	conf => "shared_buffers = '16MB'\ngateann.record_cache_size = '8MB'");

$node->safe_psql('postgres', indexed_items_sql(0.25, 20000, 32, 500));

is($node->safe_psql('postgres', q{SELECT size_bytes FROM gateann_record_cache_info()}),
	8 * 1024 * 1024, 'the cache has the configured size');

# rows of every query (id lists) and the summed counters of their scans
sub run_queries
{
	my ($cache) = @_;
	my $out = $node->safe_psql('postgres', qq{
SET enable_seqscan = off; SET gateann.record_cache = $cache;
CREATE TEMP TABLE r (q int, ids text, reads bigint, hits bigint);
DO \$\$
DECLARE qr record; ids text; s record;
BEGIN
  FOR qr IN SELECT q, v FROM queries ORDER BY q LOOP
    SELECT string_agg(id::text, ',') INTO ids
      FROM (SELECT id FROM items ORDER BY v <-> qr.v LIMIT 10) t;
    SELECT * INTO s FROM gateann_last_scan();
    INSERT INTO r VALUES (qr.q, ids, s.reads + s.page_cache_hits, s.cache_hits);
  END LOOP;
END \$\$;
SELECT string_agg(ids, ';' ORDER BY q), sum(reads), sum(hits) FROM r;});
	my ($rows, $reads, $hits) = split /\|/, $out;
	return { rows => $rows, reads => $reads, hits => $hits };
}

# exact top 10 of every query (a sequential scan)
sub exact_rows
{
	return $node->safe_psql('postgres', q{
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT string_agg(ids, ';' ORDER BY q) FROM (
  SELECT q, (SELECT string_agg(id::text, ',') FROM
              (SELECT id FROM items ORDER BY v <-> qr.v LIMIT 10) t) AS ids
  FROM queries qr) x;});
}

# a restart empties shared buffers: records come from the files
$node->restart;
my $off = run_queries('off');
is($off->{hits}, '0', 'without the cache nothing comes from it');
cmp_ok($off->{reads}, '>', 0, 'the index is read from the files');

my $fill = run_queries('on');
is($fill->{rows}, $off->{rows}, 'the scans that fill the cache return the same rows');
my $warm = run_queries('on');
is($warm->{rows}, $off->{rows}, 'scans served by the cache return the same rows');
cmp_ok($warm->{hits}, '>', 0, 'records come from the cache');
# (nor the records the filling scans took from pages they had read:
# gateann.page_search = auto reuses them here, and the cache keeps them too)
cmp_ok($warm->{reads}, '<', $fill->{reads} / 20, 'and are not read again');

my $info = $node->safe_psql('postgres',
	q{SELECT records > 0, hits > 0, hit_rate > 0 AND hit_rate <= 1 FROM gateann_record_cache_info()});
is($info, 't|t|t', 'gateann_record_cache_info counts records and hits');

# another backend's scans share the copies
my $other = $node->safe_psql('postgres', q{
SET enable_seqscan = off;
SELECT id FROM items ORDER BY v <-> (SELECT v FROM queries ORDER BY q LIMIT 1) LIMIT 10;
SELECT cache_hits > 0 FROM gateann_last_scan();});
like($other, qr/t$/, 'a new session takes records from the cache');

# --- records change under the cache ------------------------------------------------------------
# queries near the rows about to go: their records are in the cache
$node->safe_psql('postgres', q{
INSERT INTO queries SELECT 100000 + id, v FROM items WHERE id % 4 = 0 AND id % 100 = 0;});
run_queries('on');

$node->safe_psql('postgres', q{DELETE FROM items WHERE id % 4 = 0});
$node->safe_psql('postgres', q{VACUUM items});
# the freed slots are taken by new rows: same node ids, other records
$node->safe_psql('postgres', single_row_inserts_sql('items', 20000, 3000, 32));
$node->safe_psql('postgres', q{
INSERT INTO queries SELECT 200000 + id, v FROM items WHERE id > 20000 AND id % 100 = 0;});

my $stale_before = $node->safe_psql('postgres', q{SELECT stale FROM gateann_record_cache_info()});
my $after_off = run_queries('off');
my $after_on = run_queries('on');
is($after_on->{rows}, $after_off->{rows},
	'after deletes, VACUUM and inserts into freed slots the cache changes no row');
cmp_ok($node->safe_psql('postgres', q{SELECT stale FROM gateann_record_cache_info()}),
	'>', $stale_before, 'copies of changed records were found and refused');
my $again = run_queries('on');
is($again->{rows}, $after_off->{rows}, 'and again once the changed records were re-read');

# every row returned exists and the answers are near the exact ones
my @exact = split /;/, exact_rows();
my @got = split /;/, $again->{rows};
my ($found, $total) = (0, 0);
for my $i (0 .. $#exact)
{
	my %want = map { $_ => 1 } split /,/, $exact[$i];
	$found += grep { $want{$_} } split /,/, ($got[$i] // '');
	$total += scalar keys %want;
}
cmp_ok($found / $total, '>=', 0.9, "recall against a sequential scan ($found of $total)");
is($node->safe_psql('postgres', q{
SET enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM items ORDER BY v <-> (SELECT v FROM queries ORDER BY q LIMIT 1) LIMIT 50) t
WHERE id % 4 = 0 AND id <= 20000}), '0', 'no deleted row comes back');

# --- writers beside readers ---------------------------------------------------------------------
# Clients delete, insert (into freed slots after VACUUM) and VACUUM while
# others search through the cache; a search that used a stale copy (an old
# vector, or an old heap TID now pointing at another row) would return rows
# out of the order of their table vectors, and the check divides by zero.
$node->restart;
run_queries('on');		# records from the files into the cache
my $stats_before = $node->safe_psql('postgres',
	q{SELECT hits || ',' || stale FROM gateann_record_cache_info()});
$node->pgbench(
	'--no-vacuum --client=3 --jobs=1 --time=20',
	0,
	[qr{processed: [1-9]}],
	[qr{^$}],
	'searches beside deletes, inserts and VACUUM keep rows in table-vector order',
	{
		'015_search@6' => q{
\set q random(0, 99)
SET enable_seqscan = off;
SELECT 1 / (1 - least(count(*) FILTER (WHERE d < prev - 1e-4 * (1 + prev)), 1))::int
  FROM (SELECT d, lag(d) OVER (ORDER BY ord) AS prev
          FROM (SELECT row_number() OVER () AS ord,
                       t.v <-> (SELECT v FROM queries ORDER BY q OFFSET :q LIMIT 1) AS d
                  FROM (SELECT v FROM items
                         ORDER BY v <-> (SELECT v FROM queries ORDER BY q OFFSET :q LIMIT 1)
                         LIMIT 10) t) o) c;
},
		'015_write@3' => q{
\set k random(1, 19000)
DELETE FROM items WHERE id BETWEEN :k AND :k + 5;
INSERT INTO items SELECT 300000 + :k * 10 + i,
  (SELECT array_agg(random()::real) FROM generate_series(1, 32) WHERE i >= 0)
  FROM generate_series(0, 5) i;
},
		'015_vacuum@1' => q{
VACUUM items;
}
	});
my ($hits_after, $stale_after) = split /,/, $node->safe_psql('postgres',
	q{SELECT hits || ',' || stale FROM gateann_record_cache_info()});
my ($hits_before, $stale_before2) = split /,/, $stats_before;
cmp_ok($hits_after, '>', $hits_before, 'the searches took records from the cache');
cmp_ok($stale_after, '>', $stale_before2, 'and refused copies the writers had changed');
is($node->safe_psql('postgres', q{SELECT count(*) FROM gateann_verify('items_idx')}), '0',
	'gateann_verify finds nothing wrong afterwards');

$node->stop;
done_testing();
