-- gateann.filter_mode: gate (check in memory before reading, tunnel through
-- non-matching nodes), post and early (read every visited node) must all
-- return correct rows; only their cost differs.
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
CREATE TABLE fm (id int, label int, price numeric, tags int[], v real[]);
INSERT INTO fm
  SELECT i, i % 10, (i * 7919) % 1000, ARRAY[i % 13, i % 17],
         ARRAY(SELECT rnd(i, j) FROM generate_series(1, 8) j)
  FROM generate_series(1, 5000) i;
CREATE INDEX fm_idx ON fm USING gateann (v, label, price, tags);
SELECT nodes, filter_store_bytes > 0 AS has_filter_store FROM gateann_index_info('fm_idx');
SET enable_seqscan = off;
SET gateann.search_list_size = 200;

CREATE TEMP TABLE runs (mode text, cond text, ids int[], visited bigint, reads bigint,
                        tunneled bigint, checks bigint, exact bigint, returned bigint);
CREATE FUNCTION run(mode text, cond text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  got int[];
  s record;
BEGIN
  PERFORM set_config('gateann.filter_mode', mode, true);
  EXECUTE format('SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM fm WHERE %s
                  ORDER BY v <-> array_fill(0.5::real, ARRAY[8]) LIMIT 10) r', cond) INTO got;
  SELECT * INTO s FROM gateann_last_scan();
  INSERT INTO runs VALUES (mode, cond, got, s.visited, s.reads + s.buffer_hits + s.resident_hits + s.page_cache_hits, s.tunneled,
                           s.filter_checks, s.exact_distances, s.returned);
END $$;
SELECT run(m, c) FROM unnest(ARRAY['gate', 'post', 'early']) m,
  unnest(ARRAY['label = 3', 'price < 100', 'tags @> ''{5}''', 'label = 3 AND price >= 500']) c;

-- every mode returns 10 rows that satisfy the condition
SELECT r.mode, r.cond, cardinality(r.ids) AS n,
       (SELECT bool_and(ok) FROM unnest(r.ids) i,
          LATERAL (SELECT CASE r.cond
             WHEN 'label = 3' THEN label = 3
             WHEN 'price < 100' THEN price < 100
             WHEN 'tags @> ''{5}''' THEN tags @> '{5}'
             ELSE label = 3 AND price >= 500 END AS ok FROM fm WHERE id = i) x) AS correct
  FROM runs r ORDER BY cond, mode;

-- gate tunnels and reads only candidates that may match; post reads every
-- visited node and tunnels none; early reads like post but computes exact
-- distances only for matching nodes
SELECT g.cond, g.tunneled > 0 AS gate_tunnels, p.tunneled = 0 AS post_no_tunnel,
       g.reads < p.reads AS gate_reads_less, e.reads = p.reads AS early_reads_like_post,
       e.exact < p.exact AS early_fewer_distances
  FROM runs g JOIN runs p USING (cond) JOIN runs e USING (cond)
  WHERE g.mode = 'gate' AND p.mode = 'post' AND e.mode = 'early' ORDER BY 1;

-- recall against exact search is the same order of magnitude in every mode
SET enable_seqscan = on;
SET enable_indexscan = off;
SELECT r.cond, r.mode,
       cardinality(ARRAY(SELECT unnest(r.ids) INTERSECT
         SELECT unnest(e.ids))) >= 8 AS recall_ok
  FROM runs r,
  LATERAL (SELECT array_agg(id) AS ids FROM (SELECT id FROM fm WHERE
           CASE r.cond WHEN 'label = 3' THEN label = 3
                       WHEN 'price < 100' THEN price < 100
                       WHEN 'tags @> ''{5}''' THEN tags @> '{5}'
                       ELSE label = 3 AND price >= 500 END
           ORDER BY v <-> array_fill(0.5::real, ARRAY[8]) LIMIT 10) x) e
  ORDER BY 1, 2;
RESET enable_indexscan;
RESET gateann.filter_mode;
DROP FUNCTION run(text, text);
DROP TABLE fm;
