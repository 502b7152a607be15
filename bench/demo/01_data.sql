-- gateann demo, step 1: 100,000 rows of clustered 128-dimensional vectors.
-- 100 gaussian clusters (centers uniform in [-1,1]^128, sigma 0.25 per dimension); tenant 1..10,
-- category 1..20 and price are independent of the cluster.  Deterministic (setseed).
\set ON_ERROR_STOP 1
CREATE EXTENSION gateann;

\echo '--- generating 100,000 rows x 128 dims (100 clusters) ...'
SELECT setseed(0.42) \gset
CREATE TABLE demo_centers AS
  SELECT c, array_agg((random() * 2 - 1)::real ORDER BY d) AS v
    FROM generate_series(0, 99) c CROSS JOIN generate_series(1, 128) d
   GROUP BY c;

CREATE TABLE docs (id bigint PRIMARY KEY, tenant int, category int, price numeric, embedding real[]);
-- Box-Muller gives the gaussian noise (random_normal() only exists from PG16 on).
INSERT INTO docs
SELECT s.i, s.tenant, s.category, s.price,
       (SELECT array_agg((u.x + 0.25 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::real
                         ORDER BY u.o)
          FROM unnest(c.v) WITH ORDINALITY u(x, o))
  FROM (SELECT i, 1 + floor(random() * 10)::int AS tenant, 1 + floor(random() * 20)::int AS category,
               round((random() * 100)::numeric, 2) AS price, floor(random() * 100)::int AS cl
          FROM generate_series(1, 100000) i) s
  JOIN demo_centers c ON c.c = s.cl;

-- 20 queries: the vector of a stored row plus a little noise (sigma 0.05).
CREATE TABLE demo_queries AS
SELECT k AS qid, d.id AS src_id,
       (SELECT array_agg((u.x + 0.05 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::real
                         ORDER BY u.o)
          FROM unnest(d.embedding) WITH ORDINALITY u(x, o)) AS q
  FROM generate_series(1, 20) k
  JOIN docs d ON d.id = 1 + (k * 4999) % 100000;

VACUUM ANALYZE docs;
SELECT count(*) AS rows, pg_size_pretty(pg_table_size('docs')) AS table_size,
       count(DISTINCT tenant) AS tenants, count(DISTINCT category) AS categories
  FROM docs;
