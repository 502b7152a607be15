-- Indexes that grow from no rows or from a few: the first row sets an empty
-- index up, and the quantizer is retrained (every code re-encoded) each time
-- the live rows reach 4x those it was trained on, up to a build's sample.
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
-- 40 clusters in 32 dimensions
CREATE OR REPLACE FUNCTION gvec(i int) RETURNS real[] LANGUAGE sql IMMUTABLE
  AS $$ SELECT ARRAY(SELECT 8 * rnd(i % 40, j) + rnd(i, j) FROM generate_series(1, 32) j) $$;
-- recall@10 of the index (every 97th row as the query; lab = 3 if filtered), against exact search
CREATE OR REPLACE FUNCTION grown_recall(filtered bool) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
  total numeric := 0;
  q record;
  approx int[];
  exact int[];
BEGIN
  FOR q IN SELECT id, v FROM g WHERE id % 97 = 0 LOOP
    SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = on;
    approx := ARRAY(SELECT id FROM g WHERE NOT filtered OR lab = 3 ORDER BY v <-> q.v LIMIT 10);
    SET LOCAL enable_seqscan = on; SET LOCAL enable_indexscan = off;
    exact := ARRAY(SELECT id FROM g WHERE NOT filtered OR lab = 3 ORDER BY v <-> q.v, id LIMIT 10);
    total := total + (SELECT count(*) FROM unnest(approx) x WHERE x = ANY (exact));
  END LOOP;
  RETURN round(total / (10 * (SELECT count(*) FROM g WHERE id % 97 = 0)), 2);
END $$;

-- 1. an index built on no rows: its first row sets it up
CREATE TABLE g (id int PRIMARY KEY, v real[], lab int);
CREATE INDEX g_idx ON g USING gateann (v, lab)
  WITH (max_neighbors = 16, build_search_list_size = 48);
SELECT nodes, dims, pq_subspaces, pq_training_rows FROM gateann_index_info('g_idx');
INSERT INTO g VALUES (1, gvec(1), 1);
SELECT nodes, dims, pq_subspaces, pq_training_rows FROM gateann_index_info('g_idx');
SET enable_seqscan = off;
SELECT id FROM g ORDER BY v <-> gvec(1) LIMIT 3;
-- from now on the index has 32 dimensions
INSERT INTO g VALUES (0, '{1,2,3}', 0);
-- a transaction that rolls back leaves the set-up index usable
BEGIN;
INSERT INTO g VALUES (2, gvec(2), 2);
ROLLBACK;

-- 2. growing: retrained at 64, 256 and 1024 live rows
INSERT INTO g SELECT i, gvec(i), i % 10 FROM generate_series(2, 40) i;
SELECT nodes, pq_training_rows FROM gateann_index_info('g_idx');
-- the filter dictionary is empty until the first retraining: every node
-- passes the in-memory check (nothing tunneled) and is decided on its record
SELECT array_agg(id) AS lab3 FROM (SELECT id FROM g WHERE lab = 3 ORDER BY v <-> gvec(5) LIMIT 3) s;
SELECT tunneled FROM gateann_last_scan();
-- (the rolled-back row's node counts as live until VACUUM: 64 nodes at id 63)
INSERT INTO g SELECT i, gvec(i), i % 10 FROM generate_series(41, 63) i;
SELECT nodes, pq_training_rows FROM gateann_index_info('g_idx');
-- now chosen from the training sample: non-matching nodes are tunneled
SELECT array_agg(id) AS lab3 FROM (SELECT id FROM g WHERE lab = 3 ORDER BY v <-> gvec(5) LIMIT 3) s;
SELECT tunneled > 0 AS tunnels FROM gateann_last_scan();
INSERT INTO g VALUES (64, gvec(64), 4);
SELECT nodes, pq_training_rows FROM gateann_index_info('g_idx');
INSERT INTO g SELECT i, gvec(i), i % 10 FROM generate_series(65, 3000) i;
SELECT nodes, live_nodes, pq_training_rows FROM gateann_index_info('g_idx');
SELECT * FROM gateann_verify('g_idx');
-- a search steered by codes of a codebook trained on one vector finds next
-- to nothing at a small search list (recall 0.00 here); retrained ones steer
-- it as well as a build's (compared after the REINDEX below)
SET gateann.search_list_size = 48;
CREATE TEMP TABLE grown AS SELECT grown_recall(false) AS r, grown_recall(true) AS fr;
SELECT r >= 0.9 AS recall_ok FROM grown;
-- every sampled row is its own nearest neighbour
SELECT count(*) FILTER (WHERE (SELECT o.id FROM g o ORDER BY o.v <-> i.v LIMIT 1) = i.id)
         AS found_self, count(*) AS sampled
  FROM g i WHERE i.id % 50 = 0;
RESET gateann.search_list_size;

-- 3. deletes: freed slots are reused, deleted rows are not counted (nor
-- sampled) as training rows
DELETE FROM g WHERE id > 2000;
VACUUM g;
INSERT INTO g SELECT i, gvec(i), i % 10 FROM generate_series(3001, 4000) i;
SELECT nodes, live_nodes, free_slots, pq_training_rows FROM gateann_index_info('g_idx');
INSERT INTO g SELECT i, gvec(i), i % 10 FROM generate_series(4001, 5100) i;
SELECT live_nodes, pq_training_rows FROM gateann_index_info('g_idx');
SELECT * FROM gateann_verify('g_idx');
SET gateann.search_list_size = 48;
SELECT grown_recall(false) >= 0.9 AS recall_ok;
RESET gateann.search_list_size;

-- 4. REINDEX: a build's codebook (trained on every row here)
REINDEX INDEX g_idx;
SELECT nodes, pq_training_rows FROM gateann_index_info('g_idx');
-- the rows of section 2 only, for the comparison with the grown index
DELETE FROM g WHERE id > 3000;
REINDEX INDEX g_idx;
SET gateann.search_list_size = 48;
SELECT grown.r >= fresh.r - 0.05 AS recall_as_fresh, grown.fr >= fresh.fr - 0.05 AS filtered_recall_as_fresh
  FROM grown, (SELECT grown_recall(false) AS r, grown_recall(true) AS fr) fresh;
RESET gateann.search_list_size;
DROP TABLE g;

-- 5. an index built on a few rows is retrained as the table grows
CREATE TABLE f (id int, v real[]);
INSERT INTO f SELECT i, gvec(i) FROM generate_series(1, 100) i;
CREATE INDEX f_idx ON f USING gateann (v) WITH (max_neighbors = 16);
SELECT nodes, pq_training_rows FROM gateann_index_info('f_idx');
INSERT INTO f SELECT i, gvec(i) FROM generate_series(101, 500) i;
SELECT nodes, pq_training_rows FROM gateann_index_info('f_idx');
SELECT * FROM gateann_verify('f_idx');
SELECT count(*) FILTER (WHERE (SELECT o.id FROM f o ORDER BY o.v <-> i.v LIMIT 1) = i.id)
         AS found_self, count(*) AS sampled
  FROM f i WHERE i.id % 5 = 0;
DROP TABLE f;

-- 6. a first row the reloptions cannot take is refused; the index stays empty
CREATE TABLE b (id int, v real[]);
CREATE INDEX b_idx ON b USING gateann (v) WITH (pq_subspaces = 8);
INSERT INTO b VALUES (1, '{1,2,3}');
INSERT INTO b VALUES (2, '{1,2,3,NaN}');
SELECT nodes, dims FROM gateann_index_info('b_idx');
INSERT INTO b SELECT i, gvec(i) FROM generate_series(3, 10) i;
SELECT nodes, dims, pq_subspaces FROM gateann_index_info('b_idx');
DROP TABLE b;

-- 7. cosine, unlogged and temporary tables, records spanning pages
CREATE TABLE c (id int, v real[]);
CREATE INDEX c_idx ON c USING gateann (v float4_cosine_ops);
INSERT INTO c VALUES (0, array_fill(0::real, ARRAY[32]));  -- no direction: not indexed
INSERT INTO c SELECT i, gvec(i) FROM generate_series(1, 300) i;
SELECT nodes, dims, pq_training_rows FROM gateann_index_info('c_idx');
SELECT id FROM c ORDER BY v <=> gvec(77) LIMIT 1;
DROP TABLE c;

CREATE UNLOGGED TABLE u (id int, v real[]);
CREATE INDEX u_idx ON u USING gateann (v);
INSERT INTO u SELECT i, gvec(i) FROM generate_series(1, 300) i;
SELECT nodes, pq_training_rows FROM gateann_index_info('u_idx');
SELECT id FROM u ORDER BY v <-> gvec(123) LIMIT 1;
SELECT * FROM gateann_verify('u_idx');
DROP TABLE u;

CREATE TEMP TABLE t (id int, v real[]);
CREATE INDEX t_idx ON t USING gateann (v);
INSERT INTO t SELECT i, gvec(i) FROM generate_series(1, 300) i;
SELECT nodes, pq_training_rows FROM gateann_index_info('t_idx');
SELECT id FROM t ORDER BY v <-> gvec(211) LIMIT 1;
SELECT * FROM gateann_verify('t_idx');
DROP TABLE t;

-- 2100 dimensions: a record spans two pages, its code may straddle them
CREATE TABLE w (id int, v real[]);
CREATE INDEX w_idx ON w USING gateann (v) WITH (max_neighbors = 8, pq_subspaces = 16);
INSERT INTO w SELECT i, ARRAY(SELECT 8 * rnd(i % 7, j) + rnd(i, j) FROM generate_series(1, 2100) j)
  FROM generate_series(1, 80) i;
SELECT nodes, pq_training_rows, pages > 80 AS multi_page FROM gateann_index_info('w_idx');
SELECT * FROM gateann_verify('w_idx');
SELECT count(*) FILTER (WHERE (SELECT o.id FROM w o ORDER BY o.v <-> i.v LIMIT 1) = i.id)
         AS found_self, count(*) AS rows
  FROM w i;
DROP TABLE w;
