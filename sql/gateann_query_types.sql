-- The query vector as clients send it: a driver binds a list of floats as
-- double precision[] (of whole numbers as smallint[], integer[] or
-- bigint[]), SQL literals are numeric[] or integer[].  Each has
-- its own operator in the operator families, so the index takes them (no
-- cast) and none is ambiguous; the scan converts the query as a cast to
-- real[] would.
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE TABLE qt (id int, t int, v real[]);
INSERT INTO qt SELECT i, i % 3,
  ARRAY[(i % 17)::real / 4, (i % 5)::real / 2, (i % 11)::real / 3, (i % 7)::real]
  FROM generate_series(1, 3000) i;
CREATE INDEX qt_l2 ON qt USING gateann (v, t);
CREATE INDEX qt_cos ON qt USING gateann (v float4_cosine_ops, t);
CREATE INDEX qt_ip ON qt USING gateann (v float4_ip_ops, t);
SET enable_seqscan = off;
-- the index orders by each query type
EXPLAIN (COSTS OFF) SELECT id FROM qt WHERE t = 1 ORDER BY v <-> ARRAY[1.5, 2, 3, 4]::float8[] LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM qt ORDER BY v <=> ARRAY[1.5, 2, 3, 4] LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM qt ORDER BY v <#> ARRAY[1, 2, 3, 4] LIMIT 5;
-- ... with the rows and distances of the same query as real[]
CREATE FUNCTION qt_rows(op text, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  EXECUTE format('SELECT string_agg(id || '':'' || round(d::numeric, 4), '','') FROM '
                 '(SELECT id, v %1$s %2$s AS d FROM qt WHERE t = 2 ORDER BY v %1$s %2$s LIMIT 10) s',
                 op, q) INTO r;
  RETURN r;
END $$;
CREATE FUNCTION qt_same(op text) RETURNS boolean LANGUAGE sql AS $$
  SELECT qt_rows(op, 'ARRAY[1.25, 2, 3, 4]::float8[]') = qt_rows(op, '''{1.25,2,3,4}''::real[]')
     AND qt_rows(op, 'ARRAY[1.25, 2, 3, 4]') = qt_rows(op, '''{1.25,2,3,4}''::real[]')
$$;
SELECT qt_same('<->') AS l2, qt_same('<=>') AS cosine, qt_same('<#>') AS ip;
-- arrays of whole numbers (drivers send smallint[] or bigint[] by magnitude)
SELECT (SELECT array_agg(id) FROM (SELECT id FROM qt ORDER BY v <-> ARRAY[1, 2, 3, 4] LIMIT 5) s) =
       (SELECT array_agg(id) FROM (SELECT id FROM qt ORDER BY v <-> '{1,2,3,4}'::real[] LIMIT 5) s)
       AS int_same,
       (SELECT array_agg(id) FROM (SELECT id FROM qt ORDER BY v <-> ARRAY[1, 2, 3, 4]::int2[] LIMIT 5) s) =
       (SELECT array_agg(id) FROM (SELECT id FROM qt ORDER BY v <-> '{1,2,3,4}'::real[] LIMIT 5) s)
       AS smallint_same,
       (SELECT array_agg(id) FROM (SELECT id FROM qt ORDER BY v <-> ARRAY[1, 2, 3, 4]::int8[] LIMIT 5) s) =
       (SELECT array_agg(id) FROM (SELECT id FROM qt ORDER BY v <-> '{1,2,3,4}'::real[] LIMIT 5) s)
       AS bigint_same;
EXPLAIN (COSTS OFF) SELECT id FROM qt ORDER BY v <-> ARRAY[1, 2, 3, 4]::int8[] LIMIT 5;
-- an unknown literal is real[], as before
SELECT count(*) FROM (SELECT id FROM qt ORDER BY v <-> '{1,2,3,4}' LIMIT 5) s;
-- errors: as the cast to real[] would give, and the usual vector checks
SELECT id FROM qt ORDER BY v <-> ARRAY[1e300, 2, 3, 4]::float8[] LIMIT 1;
SELECT id FROM qt ORDER BY v <-> ARRAY[1, 2, 3]::float8[] LIMIT 1;
SELECT v <-> ARRAY[1, 2, 3]::float8[] FROM qt LIMIT 1;
SELECT v <-> ARRAY[1, NULL, 3, 4]::float8[] FROM qt LIMIT 1;
SELECT v <-> ARRAY['NaN', 2, 3, 4]::float8[] FROM qt ORDER BY v <-> ARRAY['NaN', 2, 3, 4]::float8[] LIMIT 1;
-- every operator class still passes amvalidate
SELECT opcname, amvalidate(oid) FROM pg_opclass
 WHERE opcmethod = (SELECT oid FROM pg_am WHERE amname = 'gateann') AND opcname LIKE 'float4%' ORDER BY 1;
RESET enable_seqscan;
DROP FUNCTION qt_same(text);
DROP FUNCTION qt_rows(text, text);
DROP TABLE qt;
