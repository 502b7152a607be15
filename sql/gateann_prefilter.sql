-- Speculative pre-filtering: in gate mode a filter that a sample of the
-- filter store says matches at most gateann.prefilter_selectivity of the
-- index is answered by checking every node in memory, ranking the matching
-- ones by PQ distance and reading the best L for exact distances and exact
-- verification.  The labels here follow the first coordinate, so a query at
-- the other end of the space must find its rows far from itself.
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
CREATE TABLE pf (id int, label int, price numeric, tags int[], v real[]);
INSERT INTO pf
  SELECT i, floor(rnd(i, 1) * 100)::int, (i * 7919) % 1000, ARRAY[i % 13, 1000 + i % 97],
         ARRAY(SELECT rnd(i, j) FROM generate_series(1, 8) j)
  FROM generate_series(1, 4000) i;
CREATE INDEX pf_idx ON pf USING gateann (v, label, price, tags);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET gateann.search_list_size = 100;
SHOW gateann.prefilter_selectivity;

-- ids of the 10 nearest rows to the all-zero vector under a condition, by
-- the index (plan checked below) and by exact search
CREATE FUNCTION knn(cond text, k int DEFAULT 10) RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE got int[];
BEGIN
  EXECUTE format('SELECT array_agg(id) FROM (SELECT id FROM pf WHERE %s
                  ORDER BY v <-> array_fill(0::real, ARRAY[8]) LIMIT %s) r', cond, k) INTO got;
  RETURN got;
END $$;
CREATE FUNCTION exact_knn(cond text, k int DEFAULT 10) RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE got int[];
BEGIN
  SET LOCAL enable_indexscan = off;
  SET LOCAL enable_seqscan = on;
  EXECUTE format('SELECT array_agg(id) FROM (SELECT id FROM pf WHERE %s
                  ORDER BY v <-> array_fill(0::real, ARRAY[8]) LIMIT %s) r', cond, k) INTO got;
  RETURN got;
END $$;

EXPLAIN (COSTS OFF) SELECT id FROM pf WHERE label = 99
  ORDER BY v <-> array_fill(0::real, ARRAY[8]) LIMIT 10;

-- 1 % of the rows (the far end of the first coordinate): pre-filtered, no
-- tunneling, every matching node read (L exceeds their number), so the rows
-- are the exact answer in exact order
SELECT knn('label = 99') = exact_knn('label = 99') AS exact;
SELECT strategy, tunneled, reads + buffer_hits + resident_hits + page_cache_hits =
         (SELECT count(*) FROM pf WHERE label = 99) AS read_all_matches,
       filter_checks >= 4000 AS checked_every_node, filter_false_positives, returned
  FROM gateann_last_scan();
-- a Bloom-filtered label set (about 1 %): false positives are verified away
SELECT knn('tags @> ''{1005}''') = exact_knn('tags @> ''{1005}''') AS exact;
SELECT strategy, tunneled FROM gateann_last_scan();
-- equi-depth buckets of a range: approximate in memory, exact on the record
SELECT knn('price BETWEEN 10 AND 19.5') = exact_knn('price BETWEEN 10 AND 19.5') AS exact;
SELECT strategy, tunneled FROM gateann_last_scan();
-- a conjunction, and a filter nothing matches
SELECT knn('label = 99 AND price < 500') = exact_knn('label = 99 AND price < 500') AS exact;
SELECT knn('label = 99 AND price > 5000') AS none;
SELECT strategy, reads + buffer_hits + resident_hits + page_cache_hits AS reads, returned
  FROM gateann_last_scan();

-- a common label stays a graph search; so does everything in post and early
-- mode, and with pre-filtering turned off
SELECT cardinality(knn('label < 50')) AS n;
SELECT strategy, tunneled > 0 AS tunnels FROM gateann_last_scan();
SET gateann.filter_mode = post;
SELECT cardinality(knn('label = 99')) AS n;
SELECT strategy FROM gateann_last_scan();
RESET gateann.filter_mode;
SET gateann.prefilter_selectivity = 0;
SELECT cardinality(knn('label = 99')) AS n;
SELECT strategy FROM gateann_last_scan();
RESET gateann.prefilter_selectivity;

-- label >= 90 matches 10 % (above the threshold: a graph search), all at the
-- far end of the first coordinate: a walk toward the query meets no
-- matching node, sees it is stuck as soon as it can tell and pre-filters
-- (the exact answer).  With pre-filtering off, a gate search also starts
-- from the nearest entry points that match, out there, and finds the exact
-- answer as well.  As common a filter spread over the space (price < 100)
-- stays a graph search.
SET gateann.search_list_size = 500;
SELECT knn('label >= 90') = exact_knn('label >= 90') AS exact;
SELECT strategy, recoveries FROM gateann_last_scan();
SELECT cardinality(knn('price < 100')) AS n;
SELECT strategy FROM gateann_last_scan();
SET gateann.prefilter_selectivity = 0;
SELECT knn('label >= 90') = exact_knn('label >= 90') AS exact;
SELECT strategy FROM gateann_last_scan();
RESET gateann.prefilter_selectivity;
RESET gateann.search_list_size;

-- a set of values as more than 4 runs of codes (the bulk check's fallback
-- loop), with a threshold above its 5 %.  (PostgreSQL before 17 does not
-- combine = ANY on a later index column with ORDER BY in one index scan:
-- there the executor filters above a graph search, with the same rows.)
SET gateann.prefilter_selectivity = 0.1;
SELECT knn('label IN (1, 3, 5, 7, 99)') = exact_knn('label IN (1, 3, 5, 7, 99)') AS exact;
RESET gateann.prefilter_selectivity;

-- streaming: a small L reads the candidates in growing batches until the
-- executor has its rows (here all the matching ones), each batch in exact order
SET gateann.search_list_size = 4;
SELECT (SELECT array_agg(x ORDER BY x) FROM unnest(knn('label = 99', 1000)) x) =
       (SELECT array_agg(id ORDER BY id) FROM pf WHERE label = 99) AS all_rows_streamed;
SELECT strategy, returned = (SELECT count(*) FROM pf WHERE label = 99) AS returned_all
  FROM gateann_last_scan();
-- a condition the executor applies above the scan
SELECT cardinality(knn('label = 98 AND id % 3 = 0', 5)) AS n,
       (SELECT bool_and(id % 3 = 0 AND label = 98) FROM pf
         WHERE id = ANY (knn('label = 98 AND id % 3 = 0', 5))) AS correct;
RESET gateann.search_list_size;

-- inserted rows are candidates at once; deleted ones stop being results
INSERT INTO pf VALUES (5001, 99, 1, '{1}', array_fill(0::real, ARRAY[8]));
SELECT (knn('label = 99'))[1] AS nearest;
DELETE FROM pf WHERE id = 5001 OR id = (exact_knn('label = 99'))[2];
VACUUM pf;
SELECT knn('label = 99') = exact_knn('label = 99') AS exact_after_delete;
SELECT strategy FROM gateann_last_scan();

-- copies: 1,536 vectors stored 12 times each (18,432 rows), a label per
-- vector that 12 of them share (0.8 % of the rows).  Copies share a PQ
-- distance, and a batch takes at most 10 of one (and a tenth of a larger
-- batch), so the first batch of 100 reads ten vectors or more, not eight or
-- nine: the others are what tells the scan how far PQ distances stray.
-- With iterative_scan = off the rows are exactly those of the first batch.
CREATE TABLE pfdup (id int, vid int, label int, v real[]);
INSERT INTO pfdup
  SELECT i, i % 1536, (i % 1536) % 128, ARRAY(SELECT rnd(i % 1536, j) FROM generate_series(1, 4) j)
  FROM generate_series(0, 18431) i;
CREATE INDEX pfdup_idx ON pfdup USING gateann (v, label);
SET gateann.iterative_scan = off;
SELECT count(DISTINCT vid) >= 10 AS ten_vectors_or_more, max(n) AS most_copies, sum(n) AS nrows
  FROM (SELECT vid, count(*) AS n
          FROM (SELECT vid FROM pfdup WHERE label = 7
                 ORDER BY v <-> array_fill(0::real, ARRAY[4]) LIMIT 1000) r
         GROUP BY vid) g;
SELECT strategy, reads + buffer_hits + resident_hits + page_cache_hits AS reads
  FROM gateann_last_scan();
RESET gateann.iterative_scan;
-- with strict order, the first 10 rows are the exact answer's distances
SELECT (SELECT array_agg(round((v <-> array_fill(0::real, ARRAY[4]))::numeric, 5))
          FROM (SELECT v FROM pfdup WHERE label = 7
                 ORDER BY v <-> array_fill(0::real, ARRAY[4]) LIMIT 10) r) =
       (SELECT array_agg(d) FROM (SELECT round((v <-> array_fill(0::real, ARRAY[4]))::numeric, 5) AS d
          FROM pfdup WHERE label = 7 ORDER BY 1 LIMIT 10) e) AS exact_distances;
DROP TABLE pfdup;

DROP FUNCTION knn(text, int);
DROP FUNCTION exact_knn(text, int);
DROP TABLE pf;
