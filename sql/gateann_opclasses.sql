-- Inner product and cosine operator classes on real[]
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
SELECT '{1,2,3}'::real[] <-> '{3,2,1}'::real[] AS l2,
       '{1,2,3}'::real[] <#> '{3,2,1}'::real[] AS neg_ip,
       round(('{1,2,3}'::real[] <=> '{3,2,1}'::real[])::numeric, 6) AS cosine,
       '{1,0}'::real[] <=> '{0,0}'::real[] AS cosine_zero;
SELECT '{1,2}'::real[] <-> '{1,2,3}'::real[];

CREATE TABLE emb (id int, v real[]);
INSERT INTO emb SELECT i, ARRAY(SELECT rnd(i, j) * (1 + i % 5) - 0.5 FROM generate_series(1, 4) j)
  FROM generate_series(1, 1500) i;
INSERT INTO emb VALUES (0, '{0,0,0,0}');

CREATE INDEX emb_ip ON emb USING gateann (v float4_ip_ops);
CREATE INDEX emb_cos ON emb USING gateann (v float4_cosine_ops);
SELECT indexrelid::regclass, metric, nodes FROM pg_index, gateann_index_info(indexrelid)
  WHERE indrelid = 'emb'::regclass ORDER BY 1;

SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM emb ORDER BY v <#> '{1,1,1,1}' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM emb ORDER BY v <=> '{1,1,1,1}' LIMIT 5;

-- compare with exact results over a few queries (recall@10 >= 0.9)
CREATE TEMP TABLE q AS SELECT g AS qid, ARRAY(SELECT rnd(g + 5000, j) - 0.5 FROM generate_series(1, 4) j) AS v
  FROM generate_series(1, 10) g;
CREATE TEMP TABLE ann AS
  SELECT q.qid, 'ip' AS m, a.id FROM q, LATERAL (SELECT id FROM emb ORDER BY v <#> q.v LIMIT 10) a
  UNION ALL
  SELECT q.qid, 'cos', a.id FROM q, LATERAL (SELECT id FROM emb ORDER BY v <=> q.v LIMIT 10) a;
SET enable_seqscan = on;
SET enable_indexscan = off;
CREATE TEMP TABLE exact AS
  SELECT q.qid, 'ip' AS m, a.id FROM q, LATERAL (SELECT id FROM emb ORDER BY v <#> q.v LIMIT 10) a
  UNION ALL
  SELECT q.qid, 'cos', a.id FROM q, LATERAL (SELECT id FROM emb ORDER BY v <=> q.v LIMIT 10) a;
RESET enable_indexscan;
SET enable_seqscan = off;
SELECT m, count(*) FILTER (WHERE e.id IS NOT NULL) / 100.0 >= 0.9 AS recall_ok
  FROM ann LEFT JOIN exact e USING (qid, m, id) GROUP BY m ORDER BY m;

-- the zero vector has no direction: a tail record of the cosine index
-- (distance NaN, after every other row), and a zero query has a NaN
-- distance to every row; the inner product index has it as any vector
SELECT count(*) FROM (SELECT id FROM emb ORDER BY v <=> '{1,2,3,4}' LIMIT 2000) s;
SELECT count(*) FROM (SELECT id FROM emb ORDER BY v <=> '{0,0,0,0}' LIMIT 5) s;
SELECT count(*) FROM (SELECT id FROM emb ORDER BY v <#> '{1,2,3,4}' LIMIT 2000) s;

-- rows come in ascending cosine / inner product distance
SELECT a = (SELECT array_agg(x ORDER BY x) FROM unnest(a) x) AS ascending
  FROM (SELECT array_agg(d) AS a FROM (SELECT v <=> '{1,2,3,4}' AS d FROM emb
                                       ORDER BY v <=> '{1,2,3,4}' LIMIT 30) s) t;
SELECT a = (SELECT array_agg(x ORDER BY x) FROM unnest(a) x) AS ascending
  FROM (SELECT array_agg(d) AS a FROM (SELECT v <#> '{1,2,3,4}' AS d FROM emb
                                       ORDER BY v <#> '{1,2,3,4}' LIMIT 30) s) t;
DROP TABLE emb;

-- amvalidate: every operator class of the extension follows the conventions
SELECT count(*) > 0 AS has_classes, count(*) FILTER (WHERE NOT amvalidate(c.oid)) AS invalid
  FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod WHERE a.amname = 'gateann';
-- ... and one that does not is reported, each violation with an INFO
CREATE FUNCTION i4_dist(int4[], int4[]) RETURNS float8 LANGUAGE sql IMMUTABLE
  AS $$ SELECT 0::float8 $$;
CREATE OPERATOR <<->> (LEFTARG = int4[], RIGHTARG = int4[], FUNCTION = i4_dist);
CREATE OPERATOR FAMILY bad_ops USING gateann;
CREATE OPERATOR CLASS bad_int4_ops FOR TYPE int4 USING gateann FAMILY bad_ops AS
  OPERATOR 3 = (int4, int4), OPERATOR 14 <> (int4, int4), FUNCTION 1 abs(int4);
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_int4_ops';
CREATE OPERATOR CLASS bad_vec_ops FOR TYPE int4[] USING gateann AS
  OPERATOR 1 <<->> FOR ORDER BY integer_ops, OPERATOR 4 <-> (real[], real[]) FOR ORDER BY float_ops;
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_vec_ops';
DROP OPERATOR FAMILY bad_ops USING gateann;
DROP OPERATOR FAMILY bad_vec_ops USING gateann;
DROP OPERATOR <<->> (int4[], int4[]);
DROP FUNCTION i4_dist(int4[], int4[]);
