-- DELETE + VACUUM, REINDEX, TRUNCATE, unlogged and temporary tables
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
CREATE TABLE m (id int, v real[]);
INSERT INTO m SELECT i, ARRAY(SELECT rnd(i, j) FROM generate_series(1, 3) j) FROM generate_series(1, 1000) i;
CREATE INDEX m_idx ON m USING gateann (v);
SET enable_seqscan = off;

-- deleted rows are never returned, before and after VACUUM
DELETE FROM m WHERE id % 2 = 0;
SELECT count(*), bool_and(id % 2 = 1)
  FROM (SELECT id FROM m ORDER BY v <-> '{0,1,0}' LIMIT 2000) r;
VACUUM m;
SELECT nodes, live_nodes, deleted_nodes + free_slots AS gone FROM gateann_index_info('m_idx');
SELECT count(*), bool_and(id % 2 = 1)
  FROM (SELECT id FROM m ORDER BY v <-> '{0,1,0}' LIMIT 2000) r;
SELECT reltuples FROM pg_class WHERE relname = 'm_idx';
-- deleted nodes still route searches: every live row is still found by itself
SELECT count(*) FILTER (WHERE (SELECT o.id FROM m o ORDER BY o.v <-> p.v LIMIT 1) = p.id)
  AS found_self, count(*) FROM m p WHERE p.id % 20 = 1;

-- REINDEX gives a new build id and drops the deleted nodes
CREATE TEMP TABLE before AS SELECT build_id FROM gateann_index_info('m_idx');
REINDEX INDEX m_idx;
SELECT nodes, deleted_nodes, build_id <> (SELECT build_id FROM before) AS new_build
  FROM gateann_index_info('m_idx');
SELECT count(*) FROM (SELECT id FROM m ORDER BY v <-> '{0,1,0}' LIMIT 2000) r;

-- TRUNCATE empties the index
TRUNCATE m;
SELECT nodes FROM gateann_index_info('m_idx');
SELECT count(*) FROM (SELECT id FROM m ORDER BY v <-> '{0,1,0}' LIMIT 10) r;
DROP TABLE m;

-- unlogged table (init fork holds an empty index)
CREATE UNLOGGED TABLE u (id int, v real[]);
INSERT INTO u SELECT i, ARRAY[i, 1]::real[] FROM generate_series(1, 50) i;
CREATE INDEX u_idx ON u USING gateann (v);
SELECT id FROM u ORDER BY v <-> '{10.2,1}' LIMIT 3;
DROP TABLE u;
CREATE UNLOGGED TABLE u2 (id int, v real[]);
CREATE INDEX u2_idx ON u2 USING gateann (v);
SELECT nodes FROM gateann_index_info('u2_idx');
DROP TABLE u2;

-- temporary table
CREATE TEMP TABLE t (id int, v real[]);
INSERT INTO t SELECT i, ARRAY[i, -i]::real[] FROM generate_series(1, 50) i;
CREATE INDEX t_idx ON t USING gateann (v);
SELECT id FROM t ORDER BY v <-> '{20.3,-20.3}' LIMIT 3;
DROP TABLE t;
