-- A double precision[] vector column (what ORMs map a list of floats to):
-- operator classes float8_l2_ops (the default), float8_ip_ops and
-- float8_cosine_ops.  The index keeps single precision; the operators
-- compute on the same converted values, so an index scan and a sequential
-- scan report the same distances.
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE FUNCTION f8_rnd(i int, j int) RETURNS float8 LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::float8 $$;
CREATE TABLE f8 (id int, t int, v double precision[]);
INSERT INTO f8 SELECT i, i % 3, ARRAY(SELECT f8_rnd(i, j) - 0.5 FROM generate_series(1, 6) j)
  FROM generate_series(1, 2000) i;
-- below real's range: indexed as zero (a cast to real[] would fail)
INSERT INTO f8 VALUES (5000, 1, '{1e-50, 0.5, 0.5, 0.5, 0.5, 0.5}');
CREATE INDEX f8_l2 ON f8 USING gateann (v, t);
CREATE INDEX f8_ip ON f8 USING gateann (v float8_ip_ops, t);
CREATE INDEX f8_cos ON f8 USING gateann (v float8_cosine_ops, t);
SELECT c.relname, o.opcname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  JOIN pg_opclass o ON o.oid = i.indclass[0] WHERE i.indrelid = 'f8'::regclass ORDER BY 1;
SELECT indexrelid::regclass, metric, nodes, dims FROM pg_index, gateann_index_info(indexrelid)
  WHERE indrelid = 'f8'::regclass ORDER BY 1;
SET gateann.search_list_size = 100;
SET enable_seqscan = off;
-- each query type a client binds reaches the index, with the filter
EXPLAIN (COSTS OFF) SELECT id FROM f8 WHERE t = 1 ORDER BY v <-> '{0.1,0.2,0.3,0.1,0.2,0.3}' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM f8 WHERE t = 1 ORDER BY v <=> '{0.1,0.2,0.3,0.1,0.2,0.3}'::real[] LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM f8 WHERE t = 1 ORDER BY v <#> ARRAY[0.1, 0.2, 0.3, 0.1, 0.2, 0.3] LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM f8 WHERE t = 1 ORDER BY v <-> ARRAY[1, 2, 3, 1, 2, 3] LIMIT 5;
-- the first ten distances of an index scan are a sequential scan's
CREATE FUNCTION f8_dists(op text, q text, use_index bool) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  EXECUTE format('SET LOCAL enable_indexscan = %s', use_index);
  EXECUTE format('SET LOCAL enable_seqscan = %s', NOT use_index);
  EXECUTE format('SELECT string_agg(round(d::numeric, 6)::text, '','') FROM '
                 '(SELECT v %1$s %2$s AS d FROM f8 WHERE t = 1 ORDER BY v %1$s %2$s LIMIT 10) s',
                 op, q) INTO r;
  RETURN r;
END $$;
SELECT op, f8_dists(op, q, true) = f8_dists(op, q, false) AS same
  FROM (VALUES ('<->'), ('<#>'), ('<=>')) o(op),
       (VALUES ('''{0.1,0.2,0.3,0.1,0.2,0.3}'''), ('ARRAY[-0.4, 0.1, 0.3, 0.0, -0.2, 0.4]::real[]'),
               ('''{1e-50,0.5,0.5,0.5,0.5,0.5}''::float8[]')) v(q)
  ORDER BY op, q;
-- the tiny value's row finds itself at distance zero
SELECT id, v <-> '{0,0.5,0.5,0.5,0.5,0.5}' AS d FROM f8 ORDER BY v <-> '{0,0.5,0.5,0.5,0.5,0.5}' LIMIT 1;
-- beyond real's range: an error, as a cast to real[] gives
INSERT INTO f8 VALUES (5001, 1, '{1e300, 0, 0, 0, 0, 0}');
SELECT id FROM f8 ORDER BY v <-> '{1e300,0,0,0,0,0}' LIMIT 1;
SELECT id FROM f8 ORDER BY v <-> '{1,2,3}' LIMIT 1;
SELECT opcname, amvalidate(oid) FROM pg_opclass
 WHERE opcmethod = (SELECT oid FROM pg_am WHERE amname = 'gateann') AND opcname LIKE 'float8\_%' ORDER BY 1;
RESET enable_seqscan;
RESET gateann.search_list_size;
DROP FUNCTION f8_dists(text, text, bool);
DROP TABLE f8;
DROP FUNCTION f8_rnd(int, int);
