-- Filter operator classes: WHERE clauses on filter columns become index
-- conditions (Index Cond), and pushing them into the scan never changes the
-- rows returned (compared with a sequential scan of the same query).
CREATE EXTENSION IF NOT EXISTS gateann;
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
-- every matching row, found by streaming the whole index: relaxed_order
-- returns each row it finds (strict_order may skip a row a later round
-- finds closer than one it already returned)
SET gateann.iterative_scan = relaxed_order;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
-- val, or NULL on every m-th row
CREATE FUNCTION nul(i int, m int, val anyelement) RETURNS anyelement LANGUAGE sql IMMUTABLE
  AS $$ SELECT CASE WHEN i % m = 0 THEN NULL ELSE val END $$;

-- the operator families and classes
SELECT f.opfname AS family, c.opcname AS class, c.opcintype::regtype AS type, c.opcdefault AS dflt
  FROM pg_opclass c JOIN pg_opfamily f ON f.oid = c.opcfamily
  WHERE c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'gateann')
    AND f.opfname LIKE 'gateann\_%'
  ORDER BY 1, 2;
SELECT f.opfname AS family, a.amopstrategy AS strategy,
       string_agg(DISTINCT o.oprname, ' ') AS operator, count(*) AS type_pairs
  FROM pg_amop a JOIN pg_opfamily f ON f.oid = a.amopfamily
  JOIN pg_operator o ON o.oid = a.amopopr
  WHERE f.opfmethod = (SELECT oid FROM pg_am WHERE amname = 'gateann')
    AND f.opfname LIKE 'gateann\_%' AND a.amoppurpose = 's'
  GROUP BY 1, 2 ORDER BY 1, 2;

-- one column of every supported type, some NULLs, arrays with NULL elements
-- and empty arrays
CREATE TABLE t (id int, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, num numeric,
                d date, ts timestamp, tstz timestamptz, b bool, txt text, vc varchar(20),
                u uuid, a2 int2[], a4 int4[], a8 int8[], at text[], v real[]);
INSERT INTO t
  SELECT i, nul(i, 29, (i % 50)::int2), nul(i, 31, i % 7), nul(i, 37, i::int8 * 1000000007),
         nul(i, 37, ((i % 40) / 8.0)::float4), nul(i, 29, (i % 64) / 16.0::float8),
         nul(i, 31, (i % 100) / 4.0), nul(i, 37, date '2024-01-01' + i % 400),
         nul(i, 29, timestamp '2024-01-01' + i * interval '3 hours'),
         nul(i, 31, timestamptz '2024-01-01 00:00+00' + i * interval '5 hours'),
         nul(i, 37, i % 3 = 0), nul(i, 29, (ARRAY['en', 'de', 'fr', 'Zh', 'éa'])[1 + i % 5]),
         nul(i, 31, ('n' || i % 20)::varchar), nul(i, 37, md5(i::text)::uuid),
         nul(i, 29, CASE WHEN i % 41 = 0 THEN '{}' ELSE ARRAY[i % 4, i % 9]::int2[] END),
         nul(i, 31, CASE WHEN i % 50 = 0 THEN ARRAY[i % 5, NULL] ELSE ARRAY[i % 5, 10 + i % 6] END),
         nul(i, 37, ARRAY[i % 8]::int8[]), nul(i, 29, ARRAY['w' || i % 11, 'x' || i % 3]),
         ARRAY(SELECT rnd(i, j) FROM generate_series(1, 4) j)
  FROM generate_series(1, 3000) i;
CREATE INDEX t_idx ON t USING gateann
  (v, i2, i4, i8, f4, f8, num, d, ts, tstz, b, txt, vc, u, a2, a4, a8, at);

-- check_cond(cond), for
--   SELECT id FROM t WHERE cond ORDER BY v <-> '{0.5,...}' LIMIT 100000:
-- how many rows the index scan returns, whether they are the rows a sequential
-- scan returns, and where the plan puts cond (its Index Cond / Filter lines)
CREATE FUNCTION check_cond(cond text, OUT n int, OUT same bool, OUT plan text)
LANGUAGE plpgsql AS $$
DECLARE
  q text := format('SELECT id FROM t WHERE %s ORDER BY v <-> %L LIMIT 100000',
                   cond, '{0.5,0.5,0.5,0.5}');
  l text;
  lines text[] := '{}';
  uses_index bool := false;
  got int[];
  ref int[];
BEGIN
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_indexscan', 'on', true);
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    uses_index := uses_index OR l LIKE '%Index Scan using%';
    IF l LIKE '%Index Cond:%' OR l LIKE '%Filter:%' THEN
      lines := lines || btrim(l);
    END IF;
  END LOOP;
  plan := CASE WHEN uses_index THEN array_to_string(lines, ' / ') ELSE 'no index scan' END;
  EXECUTE format('SELECT array_agg(id ORDER BY id) FROM (%s) r', q) INTO got;
  -- the reference: a sequential scan (the index path disabled, the seqscan enabled)
  PERFORM set_config('enable_seqscan', 'on', true);
  PERFORM set_config('enable_indexscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  EXECUTE format('SELECT array_agg(id ORDER BY id) FROM (%s) r', q) INTO ref;
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_indexscan', 'on', true);
  PERFORM set_config('enable_bitmapscan', 'on', true);
  n := coalesce(cardinality(got), 0);
  same := got IS NOT DISTINCT FROM ref;
END $$;

SET enable_seqscan = off;
-- the filtered search from the issue: every condition is an Index Cond
-- ("= ANY" / IN on a later index column too: before PostgreSQL 17 the core
-- planner leaves it out of an ordered index scan, and src/planner.c adds it)
EXPLAIN (COSTS OFF)
  SELECT id FROM t
  WHERE i4 = 3 AND txt IN ('fr', 'de') AND d >= '2024-02-01' AND a4 @> '{2}'
  ORDER BY v <-> '{0.5,0.5,0.5,0.5}' LIMIT 10;
SELECT * FROM check_cond($$i4 = 3 AND txt IN ('fr', 'de') AND d >= '2024-02-01' AND a4 @> '{2}'$$);

-- (the rest reads index pages through shared buffers: the same search, faster)
SET gateann.io_method = 'buffer';

-- every type and operator
SELECT c AS cond, r.* FROM unnest(ARRAY[
  -- integers, same type and cross-type
  'i2 = 4', 'i2 < 10::int2', 'i2 <= 10::int8', 'i2 > 45', 'i2 >= 45::int8',
  'i4 = 3', 'i4 < 2::int2', 'i4 <= 2::int8', 'i4 > 5', 'i4 >= 5::int2', '3 = i4',
  'i8 = 7000000049', 'i8 < 5::int2', 'i8 <= 50', 'i8 > 2999000000000::int8', 'i8 >= 2000000000000',
  -- floats (a numeric literal compares as float8)
  'f4 = 1.25::float4', 'f4 < 0.5', 'f4 <= 0.5::float4', 'f4 > 4.5', 'f4 >= 4.5::float8',
  'f8 = 2.5', 'f8 < 0.25::float4', 'f8 <= 0.25', 'f8 > 3.75', 'f8 >= 3.75::float4',
  -- numeric
  'num = 10', 'num < 1.5', 'num <= 1.5', 'num > 24', 'num >= 24.25',
  -- dates and times, same type and cross-type
  $$d = '2024-02-01'$$, $$d < '2024-01-10'$$, $$d <= timestamp '2024-01-10 12:00'$$,
  $$d > timestamptz '2025-01-20 00:00+00'$$, $$d >= '2025-01-20'$$,
  $$ts = '2024-01-01 03:00'$$, $$ts < date '2024-01-05'$$, $$ts <= '2024-01-05'$$,
  $$ts > timestamptz '2024-12-01 00:00+00'$$, $$ts >= '2024-12-01'$$,
  $$tstz = '2024-01-01 05:00+00'$$, $$tstz < date '2024-01-10'$$,
  $$tstz <= timestamp '2024-01-10 00:00'$$, $$tstz > '2025-09-01 00:00+00'$$,
  $$tstz >= '2025-09-01 00:00+00'$$,
  -- bool: "b", "NOT b" (and "b = true", which the planner turns into "b"),
  -- "b IS TRUE", "b IS FALSE" (before PostgreSQL 17 through src/planner.c);
  -- "b IS NOT TRUE" is not for the index (it holds for NULL)
  'b = true', 'b', 'NOT b', 'b < true', 'b >= true', 'b IS TRUE', 'b IS FALSE',
  'b IS NOT TRUE',
  -- text and varchar (the text class through binary coercion)
  $$txt = 'de'$$, $$txt < 'e'$$, $$txt <= 'de'$$, $$txt > 'f'$$, $$txt >= 'Zh'$$,
  $$vc = 'n3'$$, $$vc < 'n12'$$, $$vc >= 'n7'$$,
  -- uuid
  $$u = md5('5')::uuid$$, $$u < '20000000-0000-0000-0000-000000000000'$$,
  $$u >= 'f0000000-0000-0000-0000-000000000000'$$,
  -- arrays: overlap, contains, contained by (either side), empty arrays
  $$a2 && '{3,8}'$$, $$a2 @> '{1,5}'$$, $$a2 <@ '{0,1,2,3}'$$, $$a2 <@ '{}'$$,
  $$a4 && '{2,15}'$$, $$a4 @> '{2}'$$, $$a4 @> '{}'$$, $$a4 <@ '{0,1,2,3,10,11,12}'$$,
  $$'{2}' <@ a4$$,
  $$a8 && '{1,2}'$$, $$a8 @> '{7}'$$, $$a8 <@ '{0,1}'$$,
  $$at && '{w3,w4}'$$, $$at @> '{w1,x1}'$$, $$at <@ '{w0,w1,w2,x0,x1,x2}'$$,
  -- = ANY(array) and IN lists
  $$i4 = ANY('{1,2}')$$, 'i4 IN (1, 5)', $$i8 = ANY('{7000000049,14000000098}')$$,
  $$txt IN ('en', 'Zh')$$, $$vc = ANY('{n1,n2}')$$, $$i4 = ANY('{1,NULL}')$$,
  $$i4 = ANY('{}')$$,
  -- IS NULL / IS NOT NULL
  'i2 IS NULL', 'tstz IS NULL', 'a4 IS NULL', 'at IS NOT NULL',
  -- conjunctions
  $$i4 = 3 AND txt = 'de'$$, $$tstz >= '2024-06-01 00:00+00' AND a2 && '{1}' AND b$$,
  'i4 > 2 AND i4 < 5', 'i4 = 3 AND i4 = 4',
  -- not for the index: OR across columns, a column that is not indexed,
  -- a collation other than the column's, <> ALL, a volatile array
  $$i4 = 3 OR txt = 'de'$$, 'id < 100', $$txt < 'e' COLLATE "C"$$,
  $$i4 <> ALL('{1,2}')$$, $$i4 = ANY(ARRAY[(random() * 0)::int + 3])$$
]) c, LATERAL check_cond(c) r;

-- a comparison in another collation can use a column indexed in that collation
DROP INDEX t_idx;
CREATE INDEX t_c_idx ON t USING gateann (v, txt COLLATE "C", i4);
SELECT c AS cond, r.* FROM unnest(ARRAY[
  $$txt < 'e' COLLATE "C"$$, $$txt COLLATE "C" >= 'f'$$, $$txt = 'de' AND i4 = 3$$
]) c, LATERAL check_cond(c) r;

-- "= ANY" with a parameter (a generic plan) is an index condition too, and
-- the scan itself filters: it tunnels through the rows that fail
PREPARE any_q(int[]) AS
  SELECT id FROM t WHERE i4 = ANY($1) ORDER BY v <-> '{0.5,0.5,0.5,0.5}' LIMIT 5;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE any_q('{3,4}');
CREATE TEMP TABLE any_rows AS EXECUTE any_q('{3,4}');
SELECT returned, tunneled > 0 AS tunneled FROM gateann_last_scan();
SELECT count(*) AS rows, bool_and(t.i4 IN (3, 4)) AS all_match
  FROM any_rows JOIN t USING (id);
RESET plan_cache_mode;
DEALLOCATE any_q;

-- A second gateann index on the same vector column: before PostgreSQL 17
-- the core builds both ordered paths without "= ANY", they cost the same
-- and the planner keeps one; planner.c builds the other again with its
-- conditions, so the IN list still reaches the index that has i4.
CREATE INDEX t_second ON t USING gateann (v, (txt || 'x'));
EXPLAIN (COSTS OFF) SELECT id FROM t WHERE i4 IN (1, 5) AND txt = 'de'
  ORDER BY v <-> '{0.5,0.5,0.5,0.5}' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM t WHERE i4 IN (1, 5)
  ORDER BY v <-> '{0.5,0.5,0.5,0.5}' LIMIT 5;
DROP INDEX t_second;

RESET gateann.io_method;
DROP TABLE t;
DROP FUNCTION check_cond(text);
DROP FUNCTION nul(int, int, anyelement);
