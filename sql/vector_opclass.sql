-- gateann_vector: operator classes for pgvector's vector type
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
CREATE EXTENSION gateann_vector;
CREATE TABLE pv (id int, tenant int, embedding vector(4));
INSERT INTO pv SELECT i, i % 5, ARRAY(SELECT rnd(i, j) FROM generate_series(1, 4) j)::vector
  FROM generate_series(1, 1200) i;
INSERT INTO pv VALUES (0, 0, '[0,0,0,0]'), (-1, 1, NULL);
CREATE INDEX pv_l2 ON pv USING gateann (embedding, tenant);
CREATE INDEX pv_ip ON pv USING gateann (embedding vector_ip_ops);
CREATE INDEX pv_cos ON pv USING gateann (embedding vector_cosine_ops);
SELECT indexrelid::regclass, metric, nodes, dims, record_precision FROM pg_index, gateann_index_info(indexrelid)
  WHERE indrelid = 'pv'::regclass ORDER BY 1;

SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pv ORDER BY embedding <-> '[1,1,1,1]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM pv ORDER BY embedding <#> '[1,1,1,1]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM pv ORDER BY embedding <=> '[1,1,1,1]' LIMIT 5;

SELECT count(*) FILTER (WHERE (SELECT o.id FROM pv o ORDER BY o.embedding <-> p.embedding LIMIT 1) = p.id)
  AS found_self FROM pv p WHERE p.id % 60 = 0 AND p.id > 0;
-- rows come in ascending distance by pgvector's own operator
SELECT a = (SELECT array_agg(x ORDER BY x) FROM unnest(a) x) AS ascending
  FROM (SELECT array_agg(d) AS a FROM (SELECT embedding <-> '[1,2,3,4]' AS d FROM pv
                                       ORDER BY embedding <-> '[1,2,3,4]' LIMIT 30) s) t;
SELECT count(*) FROM (SELECT id FROM pv ORDER BY embedding <=> '[1,2,3,4]' LIMIT 5000) s;
SELECT count(*) FROM (SELECT id FROM pv ORDER BY embedding <#> '[1,2,3,4]' LIMIT 5000) s;
-- a query of another dimension
SELECT id FROM pv ORDER BY embedding <-> '[1,2,3]' LIMIT 1;
DROP TABLE pv;

-- halfvec: the same three metrics; values of every kind a half holds
-- (subnormal 6e-8, large 60000, negative) come back as pgvector reads them
CREATE TABLE ph (id int, tenant int, embedding halfvec(4));
INSERT INTO ph SELECT i, i % 5, ARRAY(SELECT rnd(i, j) - 0.5 FROM generate_series(1, 4) j)::halfvec
  FROM generate_series(1, 1200) i;
INSERT INTO ph VALUES (0, 0, '[0,0,0,0]'), (-1, 1, NULL), (-2, 2, '[6e-8,60000,-2.5,0.001]');
CREATE INDEX ph_l2 ON ph USING gateann (embedding, tenant);
CREATE INDEX ph_ip ON ph USING gateann (embedding halfvec_ip_ops);
CREATE INDEX ph_cos ON ph USING gateann (embedding halfvec_cosine_ops);
-- records of halves by default (record_precision = auto): the values
-- themselves, no error, under L2 and inner product; cosine's unit vectors
-- are not halves
SELECT indexrelid::regclass, metric, nodes, dims, record_precision, record_error = 0 AS exact
  FROM pg_index, gateann_index_info(indexrelid)
  WHERE indrelid = 'ph'::regclass ORDER BY 1;
EXPLAIN (COSTS OFF) SELECT id FROM ph WHERE tenant = 3 ORDER BY embedding <-> '[1,1,1,1]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM ph ORDER BY embedding <#> '[1,1,1,1]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM ph ORDER BY embedding <=> '[1,1,1,1]' LIMIT 5;
-- the converted record is pgvector's value: the row finds itself at distance 0
SELECT id, embedding <-> '[6e-8,60000,-2.5,0.001]' AS d FROM ph
  ORDER BY embedding <-> '[6e-8,60000,-2.5,0.001]' LIMIT 1;
SELECT gateann_halfvec_to_real('[6e-8,60000,-2.5,0.001]'::halfvec)
  = '[6e-8,60000,-2.5,0.001]'::halfvec::vector::real[] AS exact;
-- the index's first rows are the exact first rows, for each metric and a filter
SELECT count(*) FILTER (WHERE (SELECT o.id FROM ph o ORDER BY o.embedding <-> p.embedding LIMIT 1) = p.id)
  AS found_self FROM ph p WHERE p.id % 60 = 0 AND p.id > 0;
-- (distances, not ids: equal distances may come in either order)
SET enable_seqscan = on;
SET enable_indexscan = off;
CREATE TEMP TABLE exact AS SELECT
  (SELECT array_agg(d) FROM (SELECT embedding <-> '[0.3,-0.1,0.2,0.4]' AS d FROM ph ORDER BY 1 LIMIT 10) s) AS l2,
  (SELECT array_agg(d) FROM (SELECT embedding <#> '[0.3,-0.1,0.2,0.4]' AS d FROM ph ORDER BY 1 LIMIT 10) s) AS ip,
  (SELECT array_agg(d) FROM (SELECT embedding <=> '[0.3,-0.1,0.2,0.4]' AS d FROM ph ORDER BY 1 LIMIT 10) s) AS cosine,
  (SELECT array_agg(d) FROM (SELECT embedding <-> '[0.3,-0.1,0.2,0.4]' AS d FROM ph WHERE tenant = 3
                             ORDER BY 1 LIMIT 10) s) AS filtered;
RESET enable_indexscan;
SET enable_seqscan = off;
SELECT (SELECT array_agg(d) FROM (SELECT embedding <-> '[0.3,-0.1,0.2,0.4]' AS d FROM ph ORDER BY embedding <-> '[0.3,-0.1,0.2,0.4]' LIMIT 10) s) = l2 AS l2,
       (SELECT array_agg(d) FROM (SELECT embedding <#> '[0.3,-0.1,0.2,0.4]' AS d FROM ph ORDER BY embedding <#> '[0.3,-0.1,0.2,0.4]' LIMIT 10) s) = ip AS ip,
       (SELECT array_agg(d) FROM (SELECT embedding <=> '[0.3,-0.1,0.2,0.4]' AS d FROM ph ORDER BY embedding <=> '[0.3,-0.1,0.2,0.4]' LIMIT 10) s) = cosine AS cosine,
       (SELECT array_agg(d) FROM (SELECT embedding <-> '[0.3,-0.1,0.2,0.4]' AS d FROM ph WHERE tenant = 3
                                  ORDER BY embedding <-> '[0.3,-0.1,0.2,0.4]' LIMIT 10) s) = filtered AS filtered
  FROM exact;
EXPLAIN (COSTS OFF) SELECT id FROM ph WHERE tenant = 3 ORDER BY embedding <-> '[0.3,-0.1,0.2,0.4]' LIMIT 10;
SELECT count(*) FROM (SELECT id FROM ph ORDER BY embedding <=> '[1,2,3,4]' LIMIT 5000) s;
SELECT id FROM ph ORDER BY embedding <-> '[1,2,3]' LIMIT 1;
DROP TABLE ph;

-- Near ties: rows come in the order of pgvector's operators, which sum in
-- single precision in their own order (gateann_order has the same for real[]):
-- the bound the scan gives the executor is below their values, never above.
CREATE FUNCTION vo_inversions(q text) RETURNS int LANGUAGE plpgsql AS $$
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
SELECT setseed(0.5);
CREATE TABLE pv_near (id int, v vector(96), h halfvec(96));
INSERT INTO pv_near
SELECT i, a::vector, b::halfvec
  FROM (SELECT i, array_agg((1 + (floor(random() * 64) - 32) * 2 ^ (-23) + (i % 7) * 2 ^ (-20))::real ORDER BY d) AS a,
               array_agg((1 + (floor(random() * 64) - 32) * 2 ^ (-10) + (i % 7) * 2 ^ (-8))::real ORDER BY d) AS b
          FROM generate_series(1, 2000) i, generate_series(1, 96) d GROUP BY i) s;
CREATE INDEX ON pv_near USING gateann (v);
CREATE INDEX ON pv_near USING gateann (v vector_ip_ops);
CREATE INDEX ON pv_near USING gateann (v vector_cosine_ops);
CREATE INDEX ON pv_near USING gateann (h);
CREATE INDEX ON pv_near USING gateann (h halfvec_cosine_ops);
SELECT vo_inversions($q$SELECT v <-> q AS d FROM pv_near, (SELECT array_fill(0.5::real, ARRAY[96])::vector AS q) s
                        ORDER BY v <-> q LIMIT 300$q$) AS l2,
       vo_inversions($q$SELECT v <#> q AS d FROM pv_near, (SELECT array_fill(0.5::real, ARRAY[96])::vector AS q) s
                        ORDER BY v <#> q LIMIT 300$q$) AS ip,
       vo_inversions($q$SELECT v <=> q AS d FROM pv_near,
                               (SELECT array_agg((1 + (d % 3) * 0.25)::real)::vector AS q
                                  FROM generate_series(1, 96) d) s
                        ORDER BY v <=> q LIMIT 300$q$) AS cosine,
       vo_inversions($q$SELECT h <-> q AS d FROM pv_near, (SELECT array_fill(0.5::real, ARRAY[96])::halfvec AS q) s
                        ORDER BY h <-> q LIMIT 300$q$) AS half_l2,
       vo_inversions($q$SELECT h <=> q AS d FROM pv_near,
                               (SELECT array_agg((1 + (d % 3) * 0.25)::real)::halfvec AS q
                                  FROM generate_series(1, 96) d) s
                        ORDER BY h <=> q LIMIT 300$q$) AS half_cosine;
DROP TABLE pv_near;
DROP FUNCTION vo_inversions(text);
DROP EXTENSION gateann_vector;
