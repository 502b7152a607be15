-- A memory walk (gateann.read_list_size > 0): the graph is walked in memory
-- through the neighbor store, and only the best candidates by PQ distance
-- are read, n, then 2n, ... while the executor wants rows or strict_order
-- holds a row back.
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
-- 8 clusters, uniform noise within each: 16 dimensions
CREATE OR REPLACE FUNCTION cvec(i int) RETURNS real[] LANGUAGE sql IMMUTABLE
  AS $$ SELECT ARRAY(SELECT (i % 8) * 3 + rnd(i, j) FROM generate_series(1, 16) j) $$;
CREATE TABLE mw (id int PRIMARY KEY, v real[], lab int);
INSERT INTO mw SELECT i, cvec(i), i % 10 FROM generate_series(1, 3000) i;
CREATE INDEX mw_idx ON mw USING gateann (v, lab);
SELECT gateann_prewarm('mw_idx') > 0 AS loaded;
SET enable_seqscan = off;
SET gateann.search_list_size = 40;

-- recall@10 against exact search over 40 queries (ORDER BY an expression
-- the index cannot serve gives the exact answer), and queries with none
CREATE FUNCTION mw_recall(filtered bool, OUT recall float8, OUT zero_queries int) LANGUAGE plpgsql AS $$
DECLARE
  q real[];
  hits int;
BEGIN
  recall := 0;
  zero_queries := 0;
  FOR i IN 1..40 LOOP
    q := cvec(100000 + i * 7);
    SELECT count(*) INTO hits FROM
      (SELECT id FROM mw WHERE NOT filtered OR lab = i % 10
        ORDER BY v <-> q LIMIT 10) a
      JOIN
      (SELECT id FROM mw WHERE NOT filtered OR lab = i % 10
        ORDER BY (v <-> q) + 0 LIMIT 10) e USING (id);
    recall := recall + hits / 400.0;
    IF hits = 0 THEN zero_queries := zero_queries + 1; END IF;
  END LOOP;
END $$;

SET gateann.read_list_size = 10;
SELECT count(*) FROM (SELECT id FROM mw ORDER BY v <-> cvec(100007) LIMIT 10) r;
SELECT strategy, exact_distances >= 10 AS read_some, tunneled > 0 AS crossed_in_memory
  FROM gateann_last_scan();
SELECT recall >= 0.95 AS recall_ok, zero_queries FROM mw_recall(false);
SELECT recall >= 0.95 AS recall_ok, zero_queries FROM mw_recall(true);

-- it reads fewer records than a walk that reads every node it expands
CREATE FUNCTION mw_exact_distances(read_list int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  total bigint := 0;
BEGIN
  PERFORM set_config('gateann.read_list_size', read_list::text, true);
  FOR i IN 1..20 LOOP
    PERFORM id FROM (SELECT id FROM mw ORDER BY v <-> cvec(200000 + i) LIMIT 10) r;
    total := total + (SELECT exact_distances FROM gateann_last_scan());
  END LOOP;
  RETURN total;
END $$;
-- (at L = 40 a walk that reads as it goes reads 40 per query here, a memory
-- walk 11 + 22: strict_order wants the second batch)
SET gateann.search_list_size = 100;
SELECT mw_exact_distances(10) * 2 < mw_exact_distances(0) AS under_half_the_reads;
SET gateann.search_list_size = 40;

-- relaxed_order reads the first batch only, for LIMIT 10: read_list_size
-- rows and the one after them, which the executor fetches to see that the
-- tenth is in place
SET gateann.iterative_scan = relaxed_order;
SELECT count(*) FROM (SELECT id FROM mw ORDER BY v <-> cvec(100014) LIMIT 10) r;
SELECT exact_distances, strategy FROM gateann_last_scan();
RESET gateann.iterative_scan;

-- rows come in distance order while the scan walks on and reads more
-- batches, without duplicates, down to the whole index
CREATE FUNCTION mw_stream(q real[], lim int, filtered bool,
                          OUT n bigint, OUT distinct_ids bigint, OUT ordered bool,
                          OUT all_match bool) LANGUAGE plpgsql AS $$
DECLARE
  prev float8 := -1;
  r record;
BEGIN
  n := 0;
  ordered := true;
  all_match := true;
  CREATE TEMP TABLE seen (id int);
  FOR r IN SELECT id, lab, v <-> q AS d FROM mw WHERE NOT filtered OR lab = 3
           ORDER BY v <-> q LIMIT lim LOOP
    n := n + 1;
    -- (the index ranks by single-precision distances, the operator
    -- computes in double: near ties may come in either order)
    IF r.d < prev - 1e-5 * (1 + prev) THEN ordered := false; END IF;
    IF filtered AND r.lab <> 3 THEN all_match := false; END IF;
    prev := r.d;
    INSERT INTO seen VALUES (r.id);
  END LOOP;
  SELECT count(DISTINCT id) INTO distinct_ids FROM seen;
  DROP TABLE seen;
END $$;
SELECT * FROM mw_stream(cvec(100021), 500, false);
SELECT * FROM mw_stream(cvec(100028), 100000, false);
SELECT * FROM mw_stream(cvec(100035), 100000, true);
SELECT count(*) FROM mw WHERE lab = 3;

-- deleted rows, once VACUUM marked their nodes, are crossed and never read
DELETE FROM mw WHERE id % 3 = 0;
VACUUM mw;
SELECT count(*) AS deleted_returned
  FROM (SELECT id FROM mw ORDER BY v <-> cvec(100042) LIMIT 50) r WHERE id % 3 = 0;
SELECT recall >= 0.95 AS recall_ok, zero_queries FROM mw_recall(false);

-- a memory walk navigates by the tunneling prefix alone: a narrow one
-- (4 of 16 here) still finds most rows (README: below 0.95 here)
ALTER INDEX mw_idx SET (tunnel_neighbors = 4);
SELECT gateann_prewarm('mw_idx') > 0 AS loaded;
SELECT recall > 0.5 AS still_finds FROM mw_recall(false);

RESET gateann.read_list_size;
RESET gateann.search_list_size;
RESET enable_seqscan;
DROP TABLE mw;
DROP FUNCTION mw_recall(bool), mw_exact_distances(int), mw_stream(real[], int, bool);
