-- record_precision = half: records hold their vectors as IEEE binary16, half
-- the bytes per read.  The index ranks by distances to the halves; the scan
-- gives the executor a bound below the operator's distance to the row's own
-- vector (the halves' error taken off), and the executor orders rows by the
-- operator.  So rows come in exact order, recall stays as single
-- precision's on hard data, and values a half cannot hold are refused.
CREATE EXTENSION IF NOT EXISTS gateann;
SET client_min_messages = warning;
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- the option
CREATE TABLE half_opt (v real[]);
CREATE INDEX half_opt_bad ON half_opt USING gateann (v) WITH (record_precision = double);
CREATE INDEX half_opt_idx ON half_opt USING gateann (v) WITH (record_precision = half);
SELECT reloptions FROM pg_class WHERE relname = 'half_opt_idx';
-- the default (auto) for real[]: single precision
CREATE INDEX half_opt_auto ON half_opt USING gateann (v);
SELECT record_precision, record_error FROM gateann_index_info('half_opt_auto');
DROP INDEX half_opt_auto;
-- an index built on no rows lays records out at its first vector: halves
INSERT INTO half_opt VALUES ('{1.5,2,3}'), ('{0.1,0.2,0.3}'), (NULL);
SELECT v FROM half_opt ORDER BY v <-> '{0.1,0.2,0.3}' LIMIT 3;
SELECT count(*) AS problems FROM gateann_verify('half_opt_idx');
-- a value a half cannot hold: refused, naming the index and what to do
INSERT INTO half_opt VALUES ('{70000,0,0}');
INSERT INTO half_opt VALUES ('{1,-65520,0}');
DROP TABLE half_opt;

-- deterministic N(0, 1) draws (Box-Muller on setseed'ed random())
CREATE FUNCTION half_gauss() RETURNS double precision LANGUAGE sql VOLATILE
  AS $$ SELECT sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) $$;

-- recall@10 against exact search
CREATE FUNCTION half_recall(tab text, op text, qv real[]) RETURNS double precision
LANGUAGE plpgsql AS $$
DECLARE got int[]; want int[];
BEGIN
  EXECUTE format('SELECT array_agg(id) FROM (SELECT id FROM %I ORDER BY v %s $1 LIMIT 10) s',
                 tab, op) INTO got USING qv;
  SET LOCAL enable_indexscan = off;
  SET LOCAL enable_seqscan = on;
  EXECUTE format('SELECT array_agg(id) FROM (SELECT id FROM %I ORDER BY v %s $1 LIMIT 10) s',
                 tab, op) INTO want USING qv;
  RETURN (SELECT count(*) FROM unnest(want) w WHERE w = ANY (got))::double precision
         / cardinality(want);
END $$;

-- Inversions in the stream of distances a query returns, in its order.
CREATE FUNCTION half_inversions(q text) RETURNS int LANGUAGE plpgsql AS $$
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

-- 3,000 rows of 12 clusters in 64 dimensions, wide (noise 1.2), and 30
-- queries from the same clusters
SELECT setseed(0.7);
CREATE TABLE half_centre AS
  SELECT c, ARRAY(SELECT half_gauss()::real FROM generate_series(1, 64) WHERE c >= 0) AS v
  FROM generate_series(0, 11) c;
CREATE TABLE half_rows (id int PRIMARY KEY, v real[]);
INSERT INTO half_rows
  SELECT i, ARRAY(SELECT (ce.v[j] + 1.2 * half_gauss())::real FROM generate_series(1, 64) j)
  FROM generate_series(1, 3000) i JOIN half_centre ce ON ce.c = i % 12;
CREATE TABLE half_q (qid int PRIMARY KEY, v real[]);
INSERT INTO half_q
  SELECT k, ARRAY(SELECT (ce.v[j] + 1.2 * half_gauss())::real FROM generate_series(1, 64) j)
  FROM generate_series(1, 30) k JOIN half_centre ce ON ce.c = (k * 5) % 12;

-- the same rows in single and half precision: half the bytes for vectors
CREATE INDEX half_rows_single ON half_rows USING gateann (v);
CREATE INDEX half_rows_half ON half_rows USING gateann (v) WITH (record_precision = half);
SELECT pg_relation_size('half_rows_half') < 0.8 * pg_relation_size('half_rows_single')
       AS half_is_smaller;

-- recall: as single precision's (each index alone)
DROP INDEX half_rows_half;
CREATE TABLE half_recall_single AS
  SELECT qid, half_recall('half_rows', '<->', v) AS r FROM half_q;
DROP INDEX half_rows_single;
CREATE INDEX half_rows_half ON half_rows USING gateann (v) WITH (record_precision = half);
SELECT record_precision, record_error > 0 AND record_error < 0.01 AS error_ok
  FROM gateann_index_info('half_rows_half');
CREATE TEMP TABLE half_error_before AS
  SELECT record_error FROM gateann_index_info('half_rows_half');
EXPLAIN (COSTS OFF) SELECT id FROM half_rows ORDER BY v <-> '{1,2}' LIMIT 10;
SELECT avg(h.r) >= 0.95 AS mean_ok, min(h.r) >= 0.7 AS worst_ok,
       avg(h.r) >= avg(s.r) - 0.01 AS as_single
  FROM (SELECT qid, half_recall('half_rows', '<->', v) AS r FROM half_q) h
  JOIN half_recall_single s USING (qid);
-- rows in the operator's order, the whole stream
SELECT sum(half_inversions(format($q$SELECT v <-> %L::real[] AS d FROM half_rows
                                    ORDER BY v <-> %L::real[] LIMIT 200$q$, v, v))) AS inversions
  FROM half_q WHERE qid <= 10;
-- the same distances as a sequential scan
SELECT bool_and((SELECT array_agg(d) FROM (SELECT v <-> q.v AS d FROM half_rows
                   ORDER BY v <-> q.v LIMIT 10) s) =
                (SELECT array_agg(d) FROM (SELECT v <-> q.v AS d FROM half_rows
                   ORDER BY (v <-> q.v) + 0 LIMIT 10) s)) AS same_as_seqscan
  FROM half_q q WHERE qid <= 10;

-- inner product and cosine
CREATE INDEX half_rows_ip ON half_rows USING gateann (v float4_ip_ops) WITH (record_precision = half);
CREATE INDEX half_rows_cos ON half_rows USING gateann (v float4_cosine_ops) WITH (record_precision = half);
SELECT avg(half_recall('half_rows', '<#>', v)) >= 0.9 AS ip_ok,
       avg(half_recall('half_rows', '<=>', v)) >= 0.95 AS cosine_ok
  FROM half_q;
SELECT sum(half_inversions(format($q$SELECT v <#> %L::real[] AS d FROM half_rows
                                    ORDER BY v <#> %L::real[] LIMIT 200$q$, v, v))) AS ip_inversions,
       sum(half_inversions(format($q$SELECT v <=> %L::real[] AS d FROM half_rows
                                    ORDER BY v <=> %L::real[] LIMIT 200$q$, v, v))) AS cosine_inversions
  FROM half_q WHERE qid <= 10;
DROP INDEX half_rows_ip, half_rows_cos;

-- inserts, deletes, VACUUM: the index stays whole and in order; an inserted
-- vector farther from its halves than any before raises the bound's error
INSERT INTO half_rows
  SELECT 3000 + i, ARRAY(SELECT (ce.v[j] + 1.2 * half_gauss())::real FROM generate_series(1, 64) j)
  FROM generate_series(1, 300) i JOIN half_centre ce ON ce.c = i % 12;
INSERT INTO half_rows
  SELECT 4000 + i, ARRAY(SELECT (ce.v[j] * 3000 + half_gauss())::real FROM generate_series(1, 64) j)
  FROM generate_series(1, 3) i JOIN half_centre ce ON ce.c = i;
SELECT i.record_error > b.record_error AS error_raised
  FROM gateann_index_info('half_rows_half') i, half_error_before b;
DELETE FROM half_rows WHERE id % 9 = 0;
VACUUM half_rows;
SELECT count(*) AS problems FROM gateann_verify('half_rows_half');
SELECT sum(half_inversions(format($q$SELECT v <-> %L::real[] AS d FROM half_rows
                                    ORDER BY v <-> %L::real[] LIMIT 200$q$, v, v))) AS inversions
  FROM (SELECT v FROM half_rows WHERE id > 4000 UNION ALL SELECT v FROM half_q WHERE qid <= 5) s;
SELECT avg(half_recall('half_rows', '<->', v)) >= 0.95 AS recall_after_writes FROM half_q;

-- near ties finer than a half can tell apart (elements 1 plus a few units
-- in the last place of single precision: every record holds the same
-- halves): the index cannot rank them, the executor still orders them
SELECT setseed(0.5);
CREATE TABLE half_near (id int, v real[]);
INSERT INTO half_near
SELECT i, array_agg((1 + (floor(random() * 64) - 32) * 2 ^ (-23)
                     + (i % 7) * 2 ^ (-20))::real ORDER BY d)
  FROM generate_series(1, 1000) i, generate_series(1, 32) d GROUP BY i;
CREATE INDEX half_near_idx ON half_near USING gateann (v) WITH (record_precision = half);
SELECT half_inversions($q$SELECT v <-> array_fill(0.5::real, ARRAY[32]) AS d FROM half_near
                        ORDER BY v <-> array_fill(0.5::real, ARRAY[32]) LIMIT 100$q$) AS near_inversions,
       (SELECT array_agg(id) FROM (SELECT id FROM half_near
          ORDER BY v <-> array_fill(0.5::real, ARRAY[32]), id LIMIT 5) s) =
       (SELECT array_agg(id) FROM (SELECT id FROM half_near
          ORDER BY (v <-> array_fill(0.5::real, ARRAY[32])) + 0, id LIMIT 5) s) AS same_first_rows;

-- a table with a value no half holds cannot get a half index
CREATE TABLE half_big (v real[]);
INSERT INTO half_big VALUES ('{1,2,3}'), ('{4,1e12,6}');
CREATE INDEX half_big_idx ON half_big USING gateann (v) WITH (record_precision = half);
CREATE INDEX half_big_idx ON half_big USING gateann (v);

RESET enable_seqscan;
RESET enable_bitmapscan;
DROP TABLE half_rows, half_q, half_centre, half_near, half_big, half_recall_single;
DROP FUNCTION half_gauss(), half_recall(text, text, real[]), half_inversions(text);
