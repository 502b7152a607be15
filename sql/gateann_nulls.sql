-- Rows whose vector has no distance: a NULL vector (distance NULL) and,
-- under cosine, a zero vector (distance NaN).  The index keeps them as tail
-- records and returns them after every other row, NaN before NULL, as
-- ORDER BY ... (NULLS LAST) sorts them; so do a NULL query (every distance
-- NULL) and a zero cosine query (every distance NaN, NULL for NULL
-- vectors).  Every check compares the index's rows with a sequential scan's.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gateann;
RESET client_min_messages;

-- ids 1..300: every 10th vector NULL, every 10th + 5 zero; t in 0..2
CREATE TABLE nv (id int, v real[], t int);
INSERT INTO nv SELECT i,
  CASE WHEN i % 10 = 0 THEN NULL
       WHEN i % 10 = 5 THEN '{0,0,0,0}'
       ELSE ARRAY[sin(i), cos(i), sin(i * 0.7), cos(i * 1.3) + 2]::real[] END,
  i % 3
  FROM generate_series(1, 300) i;
CREATE INDEX nv_l2 ON nv USING gateann (v, t) WITH (max_neighbors = 16);
CREATE INDEX nv_cos ON nv USING gateann (v float4_cosine_ops, t) WITH (max_neighbors = 16);
SELECT indexrelid::regclass, (gateann_index_info(indexrelid)).nodes
  FROM pg_index WHERE indrelid = 'nv'::regclass ORDER BY 1;

-- run(q, true) and run(q, false): the rows of one query through a gateann
-- index scan (an error if the plan has none) and through a sequential scan,
-- with their position and distance
CREATE FUNCTION run(q text, use_index bool)
  RETURNS TABLE (pos bigint, id int, d float8) LANGUAGE plpgsql AS $$
DECLARE
  plan text := '';
  line text;
BEGIN
  PERFORM set_config('enable_seqscan', (NOT use_index)::text, true);
  PERFORM set_config('enable_indexscan', use_index::text, true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    plan := plan || line || E'\n';
  END LOOP;
  IF use_index <> (plan LIKE '%Index Scan using%') THEN
    RAISE EXCEPTION 'unexpected plan: %', plan;
  END IF;
  RETURN QUERY EXECUTE 'SELECT row_number() OVER (), s.id, s.d FROM (' || q || ') s';
END $$;

-- same rows, same distances (NULLs equal), and the index's in order:
-- numbers ascending, then NaN, then NULL
CREATE FUNCTION same(q text) RETURNS TABLE (idx_rows bigint, seq_rows bigint, nulls bigint,
                                            nans bigint, same_rows bool, in_order bool)
  LANGUAGE sql AS $$
  WITH i AS (SELECT * FROM run(q, true)), s AS (SELECT * FROM run(q, false))
  SELECT (SELECT count(*) FROM i), (SELECT count(*) FROM s),
         (SELECT count(*) FROM i WHERE d IS NULL),
         (SELECT count(*) FROM i WHERE d = 'NaN'),
         NOT EXISTS (SELECT id, d FROM i EXCEPT SELECT id, d FROM s) AND
         NOT EXISTS (SELECT id, d FROM s EXCEPT SELECT id, d FROM i),
         NOT EXISTS (SELECT 1 FROM i a JOIN i b ON b.pos = a.pos + 1
                      WHERE (a.d IS NULL AND b.d IS NOT NULL) OR a.d > b.d)
$$;

-- LIMIT beyond the rows with a distance: all rows, NULL (and NaN) last
SELECT * FROM same($$SELECT id, v <-> '{0.5,0.5,0.5,2}' AS d FROM nv ORDER BY v <-> '{0.5,0.5,0.5,2}' LIMIT 1000$$);
SELECT * FROM same($$SELECT id, v <=> '{0.5,0.5,0.5,2}' AS d FROM nv ORDER BY v <=> '{0.5,0.5,0.5,2}' LIMIT 1000$$);
-- a LIMIT that ends among the NULL rows: every row with a distance, then some
SELECT idx_rows, nulls, in_order FROM same($$SELECT id, v <-> '{0.5,0.5,0.5,2}' AS d FROM nv ORDER BY v <-> '{0.5,0.5,0.5,2}' LIMIT 275$$);
-- with a filter the index checks
SELECT * FROM same($$SELECT id, v <=> '{1,0,0,2}' AS d FROM nv WHERE t = 1 ORDER BY v <=> '{1,0,0,2}' LIMIT 1000$$);

-- IS NULL and IS NOT NULL on the vector column
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM nv WHERE v IS NULL ORDER BY v <-> '{1,1,1,1}' LIMIT 5;
RESET enable_seqscan;
SELECT * FROM same($$SELECT id, v <-> '{1,1,1,1}' AS d FROM nv WHERE v IS NULL ORDER BY v <-> '{1,1,1,1}' LIMIT 100$$);
SELECT * FROM same($$SELECT id, v <-> '{1,1,1,1}' AS d FROM nv WHERE v IS NULL AND t = 2 ORDER BY v <-> '{1,1,1,1}' LIMIT 100$$);
SELECT * FROM same($$SELECT id, v <=> '{1,1,1,1}' AS d FROM nv WHERE v IS NOT NULL ORDER BY v <=> '{1,1,1,1}' LIMIT 1000$$);
SELECT * FROM same($$SELECT id, v <=> '{1,1,1,1}' AS d FROM nv WHERE v IS NOT NULL AND v IS NULL ORDER BY v <=> '{1,1,1,1}' LIMIT 1000$$);

-- a NULL query (a NULL constant is folded away: as a subquery's value), every
-- distance NULL: every row, in no particular order
SELECT * FROM same($$SELECT id, v <-> (SELECT NULL::real[]) AS d FROM nv ORDER BY v <-> (SELECT NULL::real[]) LIMIT 1000$$);
SELECT count(*) FROM run($$SELECT id, v <-> (SELECT NULL::real[]) AS d FROM nv ORDER BY v <-> (SELECT NULL::real[]) LIMIT 10$$, true);
-- ... also as a parameter of a generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE knn(real[]) AS SELECT count(*) FROM (SELECT id FROM nv WHERE t = 0 ORDER BY v <-> $1 LIMIT 10) s;
SET enable_seqscan = off;
EXECUTE knn(NULL);
EXECUTE knn('{1,1,1,1}');
RESET enable_seqscan;
DEALLOCATE knn;
RESET plan_cache_mode;

-- a zero query under cosine: NaN to every vector, NULL to NULL vectors
SELECT * FROM same($$SELECT id, v <=> '{0,0,0,0}' AS d FROM nv ORDER BY v <=> '{0,0,0,0}' LIMIT 1000$$);
SELECT * FROM same($$SELECT id, v <=> '{0,0,0,0}' AS d FROM nv WHERE t = 2 ORDER BY v <=> '{0,0,0,0}' LIMIT 1000$$);

-- writes: NULL and zero rows inserted, deleted, vacuumed, their slots reused
INSERT INTO nv SELECT i, CASE WHEN i % 2 = 0 THEN NULL ELSE '{0,0,0,0}'::real[] END, i % 3
  FROM generate_series(301, 340) i;
DELETE FROM nv WHERE id % 20 = 0 OR id % 20 = 5 OR id % 7 = 0;
VACUUM nv;
INSERT INTO nv SELECT i, CASE WHEN i % 3 = 0 THEN NULL WHEN i % 3 = 1 THEN '{0,0,0,0}'::real[]
                            ELSE ARRAY[i % 5, 1, 2, 3]::real[] END, i % 3
  FROM generate_series(341, 400) i;
SELECT * FROM same($$SELECT id, v <=> '{0.5,0.5,0.5,2}' AS d FROM nv ORDER BY v <=> '{0.5,0.5,0.5,2}' LIMIT 1000$$);
SELECT * FROM same($$SELECT id, v <-> '{0.5,0.5,0.5,2}' AS d FROM nv WHERE t = 1 ORDER BY v <-> '{0.5,0.5,0.5,2}' LIMIT 1000$$);
SELECT * FROM gateann_verify('nv_l2');
SELECT * FROM gateann_verify('nv_cos');
-- a row whose vector becomes NULL, and back
UPDATE nv SET v = NULL WHERE id = 1;
SELECT count(*) FROM run($$SELECT id, v <-> '{1,1,1,1}' AS d FROM nv WHERE v IS NULL ORDER BY v <-> '{1,1,1,1}' LIMIT 1000$$, true) WHERE id = 1;
UPDATE nv SET v = '{1,1,1,1}' WHERE id = 1;
SELECT id FROM nv ORDER BY v <-> '{1,1,1,1}' LIMIT 1;
DROP TABLE nv;

-- an index built on no rows whose first rows have NULL vectors: they are
-- kept, and carried over when the first vector lays the index out
CREATE TABLE late (id int, v real[], tag text);
CREATE INDEX late_idx ON late USING gateann (v, tag);
INSERT INTO late VALUES (1, NULL, 'a'), (2, NULL, 'b'), (3, NULL, 'a');
SELECT nodes, dims FROM gateann_index_info('late_idx');
SELECT * FROM same($$SELECT id, v <-> '{1,2,3}' AS d FROM late ORDER BY v <-> '{1,2,3}' LIMIT 10$$);
DELETE FROM late WHERE id = 2;
VACUUM late;
INSERT INTO late VALUES (4, '{1,2,3}', 'a'), (5, NULL, 'a'), (6, '{2,2,3}', 'b');
SELECT nodes, dims FROM gateann_index_info('late_idx');
SELECT * FROM same($$SELECT id, v <-> '{1,2,3}' AS d FROM late ORDER BY v <-> '{1,2,3}' LIMIT 10$$);
SELECT * FROM same($$SELECT id, v <-> '{1,2,3}' AS d FROM late WHERE tag = 'a' ORDER BY v <-> '{1,2,3}' LIMIT 10$$);
SELECT * FROM gateann_verify('late_idx');
DROP TABLE late;

-- a cosine index built on zero and NULL vectors only
CREATE TABLE flat (id int, v real[]);
INSERT INTO flat VALUES (1, '{0,0}'), (2, NULL), (3, '{0,0}');
CREATE INDEX flat_idx ON flat USING gateann (v float4_cosine_ops);
SELECT nodes, dims FROM gateann_index_info('flat_idx');
SELECT * FROM same($$SELECT id, v <=> '{1,0}' AS d FROM flat ORDER BY v <=> '{1,0}' LIMIT 10$$);
INSERT INTO flat VALUES (4, '{1,1}');
SELECT * FROM same($$SELECT id, v <=> '{1,0}' AS d FROM flat ORDER BY v <=> '{1,0}' LIMIT 10$$);
SELECT * FROM gateann_verify('flat_idx');
DROP TABLE flat;

DROP FUNCTION same(text);
DROP FUNCTION run(text, bool);
