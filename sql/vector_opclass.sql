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
SELECT indexrelid::regclass, metric, nodes, dims FROM pg_index, gateann_index_info(indexrelid)
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
DROP EXTENSION gateann_vector;
