-- Rows come out in the order of the ORDER BY operator's own distances.
-- The index ranks rows by single-precision distances; the operators compute
-- in double.  The scan hands the executor a bound below the operator's value
-- (xs_recheckorderby) and the executor orders rows by the operator.  A bound
-- that is not one raises "index returned tuples in wrong order"; no bound
-- (the index's values taken as exact) leaves rows out of order.
CREATE EXTENSION IF NOT EXISTS gateann;
SET client_min_messages = warning;

-- Inversions in the stream of distances a query returns, in its order.
CREATE FUNCTION order_inversions(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	r record;
	prev double precision := '-Infinity';
	n int := 0;
BEGIN
	FOR r IN EXECUTE q LOOP
		IF r.d < prev THEN n := n + 1; END IF;
		prev := r.d;
	END LOOP;
	RETURN n;
END $$;

-- Every element is 1 plus a few units in the last place of single precision
-- and a step per row class: the rows' distances lie within a few millionths
-- of one another, where single-precision sums round differently from double
-- ones (before the bound: 134 of 300 rows out of order).
SELECT setseed(0.5);
CREATE TABLE order_near (id int, v real[], w double precision[]);
INSERT INTO order_near
SELECT i, a, a::double precision[]
  FROM (SELECT i, array_agg((1 + (floor(random() * 64) - 32) * 2 ^ (-23)
                             + (i % 7) * 2 ^ (-20))::real ORDER BY d) AS a
          FROM generate_series(1, 3000) i, generate_series(1, 96) d GROUP BY i) s;
CREATE INDEX order_near_l2 ON order_near USING gateann (v);
CREATE INDEX order_near_ip ON order_near USING gateann (v float4_ip_ops);
CREATE INDEX order_near_cos ON order_near USING gateann (v float4_cosine_ops);
CREATE INDEX order_near_w ON order_near USING gateann (w);
SET enable_seqscan = off;

EXPLAIN (COSTS OFF)
SELECT v <-> array_fill(0.5::real, ARRAY[96]) AS d FROM order_near
 ORDER BY v <-> array_fill(0.5::real, ARRAY[96]) LIMIT 300;
SELECT order_inversions($q$SELECT v <-> array_fill(0.5::real, ARRAY[96]) AS d FROM order_near
                     ORDER BY v <-> array_fill(0.5::real, ARRAY[96]) LIMIT 300$q$) AS l2,
       order_inversions($q$SELECT v <#> array_fill(0.5::real, ARRAY[96]) AS d FROM order_near
                     ORDER BY v <#> array_fill(0.5::real, ARRAY[96]) LIMIT 300$q$) AS ip,
       order_inversions($q$SELECT v <=> q AS d FROM order_near,
                            (SELECT array_agg((1 + (d % 3) * 0.25)::real) AS q
                               FROM generate_series(1, 96) d) s
                     ORDER BY v <=> q LIMIT 300$q$) AS cosine,
       order_inversions($q$SELECT w <-> array_fill(0.5::float8, ARRAY[96]) AS d FROM order_near
                     ORDER BY w <-> array_fill(0.5::float8, ARRAY[96]) LIMIT 300$q$) AS float8_l2;
-- and every row, including the rows after the first round
SELECT count(*), order_inversions($q$SELECT v <-> array_fill(0.5::real, ARRAY[96]) AS d FROM order_near
                               ORDER BY v <-> array_fill(0.5::real, ARRAY[96])$q$) AS l2_all
  FROM order_near;
-- the distances a sequential scan orders
SELECT (SELECT array_agg(d) FROM (SELECT v <-> array_fill(0.5::real, ARRAY[96]) AS d FROM order_near
          ORDER BY v <-> array_fill(0.5::real, ARRAY[96]) LIMIT 20) s) =
       (SELECT array_agg(d) FROM (SELECT v <-> array_fill(0.5::real, ARRAY[96]) AS d FROM order_near
          ORDER BY (v <-> array_fill(0.5::real, ARRAY[96])) + 0 LIMIT 20) s) AS same_as_seqscan;

-- Elements of every magnitude, from subnormal to 1e12, both signs: the bound
-- holds (no error) and rows are in order, under all three metrics.
SELECT setseed(0.25);
CREATE TABLE order_wide (id int, v real[]);
INSERT INTO order_wide
SELECT i, array_agg((CASE (i + d) % 5
        WHEN 0 THEN (random() - 0.5) * 10 ^ (floor(random() * 30) - 20)
        WHEN 1 THEN (random() - 0.5) * 1e-38
        WHEN 2 THEN (random() - 0.5) * 1e12
        WHEN 3 THEN 1 + (floor(random() * 64) - 32) * 2 ^ (-23)
        ELSE (random() - 0.5) END)::real ORDER BY d)
  FROM generate_series(1, 1500) i, generate_series(1, 40) d GROUP BY i;
CREATE INDEX order_wide_l2 ON order_wide USING gateann (v);
CREATE INDEX order_wide_ip ON order_wide USING gateann (v float4_ip_ops);
CREATE INDEX order_wide_cos ON order_wide USING gateann (v float4_cosine_ops);
EXPLAIN (COSTS OFF) SELECT id FROM order_wide ORDER BY v <#> array_fill(1::real, ARRAY[40]) LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM order_wide ORDER BY v <=> array_fill(1::real, ARRAY[40]) LIMIT 5;
SELECT id,
       order_inversions(format($q$SELECT v <-> %L::real[] AS d FROM order_wide ORDER BY v <-> %L::real[] LIMIT 400$q$, q, q)) AS l2,
       order_inversions(format($q$SELECT v <#> %L::real[] AS d FROM order_wide ORDER BY v <#> %L::real[] LIMIT 400$q$, q, q)) AS ip,
       order_inversions(format($q$SELECT v <=> %L::real[] AS d FROM order_wide ORDER BY v <=> %L::real[] LIMIT 400$q$, q, q)) AS cosine
  FROM (SELECT id, v AS q FROM order_wide WHERE id % 500 = 7) s ORDER BY id;

RESET enable_seqscan;
DROP TABLE order_near, order_wide;
DROP FUNCTION order_inversions(text);
