-- Streaming: LIMIT beyond gateann.search_list_size, filters the executor
-- applies above the scan, and the gateann.max_scan_tuples cap
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
CREATE TABLE s (id int, tenant int, v real[]);
INSERT INTO s SELECT i, i % 10, ARRAY(SELECT rnd(i, j) * 5 FROM generate_series(1, 6) j)
  FROM generate_series(1, 4000) i;
CREATE INDEX s_idx ON s USING gateann (v);
SET enable_seqscan = off;
SET gateann.search_list_size = 100;

-- LIMIT 500 with L = 100 still returns 500 distinct rows
SELECT count(*), count(DISTINCT id)
  FROM (SELECT id FROM s ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 500) r;
SELECT returned, visited >= 500 AS visited_enough FROM gateann_last_scan();

-- a filter the index does not evaluate (here on a non-indexed column):
-- rows keep streaming until LIMIT is met
EXPLAIN (COSTS OFF)
  SELECT id FROM s WHERE tenant = 3 ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 20;
SELECT count(*), bool_and(tenant = 3)
  FROM (SELECT id, tenant FROM s WHERE tenant = 3 ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 20) r;
-- a very selective one (3 matching rows) still finds all of them
SELECT array_agg(id ORDER BY id)
  FROM (SELECT id FROM s WHERE id IN (17, 1717, 3333) ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 10) r;

-- the whole index can be streamed
SELECT count(*) FROM (SELECT id FROM s ORDER BY v <-> '{0,0,0,0,0,0}' LIMIT 10000) r;

-- gateann.max_scan_tuples caps the nodes a scan visits
SET gateann.max_scan_tuples = 50;
SELECT count(*) FROM (SELECT id FROM s ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 500) r;
SELECT visited FROM gateann_last_scan();
RESET gateann.max_scan_tuples;

-- cursors: the scan only moves forward; a SCROLL cursor materializes
BEGIN;
DECLARE c CURSOR FOR SELECT id FROM s ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 30;
MOVE FORWARD 10 IN c;
FETCH BACKWARD 1 FROM c;
ROLLBACK;
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT id FROM s ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 30;
MOVE FORWARD 5 IN c;
MOVE BACKWARD 4 IN c;
MOVE FORWARD ALL IN c;
ROLLBACK;
DROP TABLE s;
