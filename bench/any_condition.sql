-- "= ANY" against "=" on a filter column, in gate mode at the defaults:
-- recall@10 against an exact scan, reads and time per query.  Before
-- PostgreSQL 17 the core planner keeps "= ANY" out of an ordered index
-- scan; src/planner.c puts it back (bench/RESULTS.md, "= ANY before 17").
--   psql -X -f bench/any_condition.sql   (a database with gateann; ~1 min)
-- 50,000 rows of 32-d random() vectors, tenant one of 100 values; 50
-- queries, each with its tenant (1 %) and with 10 tenants (10 %).
\set ON_ERROR_STOP on
SET client_min_messages = warning;
DROP TABLE IF EXISTS anyb, anyq;
SELECT setseed(0.42) \g /dev/null
CREATE TABLE anyb (id int, v real[], tenant int);
INSERT INTO anyb
  SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 32) WHERE i > 0),
         (i * 7919) % 100
    FROM generate_series(1, 50000) i;
CREATE INDEX anyb_idx ON anyb USING gateann (v, tenant);
ANALYZE anyb;
CREATE TABLE anyq AS
  SELECT q, (SELECT array_agg(random()::real) FROM generate_series(1, 32) WHERE q > 0) AS v,
         (q * 13) % 100 AS t
    FROM generate_series(1, 50) q;

CREATE TEMP TABLE res (form text, q int, hits int, reads bigint, tunneled bigint, ms float8);
DO $$
DECLARE
  r record; st record; form text; t0 timestamptz;
  got int[]; truth int[]; truth10 int[]; ten int[];
BEGIN
  FOR r IN SELECT * FROM anyq LOOP
    ten := ARRAY(SELECT (r.t + k) % 100 FROM generate_series(0, 9) k);
    -- the truth: an exact scan
    SET LOCAL enable_indexscan = off;
    SELECT array_agg(id) INTO truth
      FROM (SELECT id FROM anyb WHERE tenant = r.t ORDER BY v <-> r.v LIMIT 10) s;
    SELECT array_agg(id) INTO truth10
      FROM (SELECT id FROM anyb WHERE tenant = ANY(ten) ORDER BY v <-> r.v LIMIT 10) s;
    RESET enable_indexscan;
    SET LOCAL enable_seqscan = off;
    FOREACH form IN ARRAY ARRAY['eq', 'any', 'any10'] LOOP
      t0 := clock_timestamp();
      IF form = 'eq' THEN
        SELECT array_agg(id) INTO got
          FROM (SELECT id FROM anyb WHERE tenant = r.t ORDER BY v <-> r.v LIMIT 10) s;
      ELSIF form = 'any' THEN
        SELECT array_agg(id) INTO got
          FROM (SELECT id FROM anyb WHERE tenant = ANY(ARRAY[r.t]) ORDER BY v <-> r.v LIMIT 10) s;
      ELSE
        SELECT array_agg(id) INTO got
          FROM (SELECT id FROM anyb WHERE tenant = ANY(ten) ORDER BY v <-> r.v LIMIT 10) s;
      END IF;
      SELECT * INTO st FROM gateann_last_scan();
      INSERT INTO res VALUES
        (form, r.q,
         (SELECT count(*) FROM unnest(got) g
           WHERE g = ANY(CASE WHEN form = 'any10' THEN truth10 ELSE truth END)),
         st.reads, st.tunneled, extract(epoch FROM clock_timestamp() - t0) * 1000);
    END LOOP;
    RESET enable_seqscan;
  END LOOP;
END $$;
SELECT form, round(avg(hits) / 10.0, 3) AS recall, sum((hits = 0)::int) AS zero,
       round(avg(reads)) AS reads, round(avg(tunneled)) AS tunneled,
       round(avg(ms)::numeric, 2) AS ms
  FROM res GROUP BY form ORDER BY form;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
  SELECT id FROM anyb WHERE tenant = ANY('{3}') ORDER BY v <-> (SELECT v FROM anyq LIMIT 1) LIMIT 10;
DROP TABLE anyb, anyq;
