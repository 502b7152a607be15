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

-- gateann.max_scan_tuples caps the nodes a scan visits; when the executor
-- still wants rows, a NOTICE and budget_exhausted say so
SET gateann.max_scan_tuples = 50;
SELECT count(*) FROM (SELECT id FROM s ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 500) r;
SELECT visited, budget_exhausted FROM gateann_last_scan();
SELECT count(*) FROM (SELECT id FROM s ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 20) r;
SELECT budget_exhausted FROM gateann_last_scan();
-- ... and when it was the index conditions that matched few of the nodes
-- visited, the NOTICE says that instead
CREATE TABLE s2 (id int, tag int, v real[]);
INSERT INTO s2 SELECT id, CASE WHEN id % 100 = 0 THEN 1 ELSE 0 END, v FROM s;
CREATE INDEX s2_idx ON s2 USING gateann (v, tag);
SET gateann.filter_mode = post;
SELECT count(*) FROM (SELECT id FROM s2 WHERE tag = 1 ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 20) r;
SELECT budget_exhausted FROM gateann_last_scan();
RESET gateann.filter_mode;
DROP TABLE s2;
RESET gateann.max_scan_tuples;

-- rows in exact distance order across rounds.  tenant is not indexed: the
-- executor filters, the scan resumes with longer lists.  strict_order (the
-- default) never returns a row closer than one before it; relaxed_order
-- returns every row it finds; off stops after the first round.
CREATE FUNCTION out_of_order(q real[], lim int) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM (
    SELECT d < lag(d) OVER (ORDER BY n) AS back
      FROM (SELECT row_number() OVER () AS n, v <-> q AS d
              FROM (SELECT v FROM s WHERE tenant = 3 ORDER BY v <-> q LIMIT lim) r) t) u
   WHERE back $$;
CREATE TEMP TABLE qs AS
  SELECT k, ARRAY(SELECT rnd(k + 9000, j) * 5 FROM generate_series(1, 6) j)::real[] AS q
  FROM generate_series(1, 40) k;
-- the rows strict_order leaves out are counted (gateann_last_scan().skipped)
CREATE FUNCTION skipped_rows(q real[]) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  PERFORM count(*) FROM (SELECT 1 FROM s WHERE tenant = 3 ORDER BY v <-> q LIMIT 30) r;
  SELECT skipped INTO n FROM gateann_last_scan();
  RETURN n;
END $$;
SET gateann.search_list_size = 10;
SHOW gateann.iterative_scan;
SELECT sum(out_of_order(q, 30)) AS strict_out_of_order,
       count(*) FILTER (WHERE (SELECT count(*) FROM (SELECT 1 FROM s WHERE tenant = 3
                               ORDER BY v <-> q LIMIT 30) r) = 30) AS strict_full
  FROM qs;
SELECT sum(skipped_rows(q)) > 0 AS strict_skipped FROM qs;
SET gateann.iterative_scan = relaxed_order;
SELECT sum(out_of_order(q, 30)) > 0 AS relaxed_out_of_order FROM qs;
SELECT sum(skipped_rows(q)) AS relaxed_skipped FROM qs;
SET gateann.iterative_scan = off;
SELECT count(*) < 30 AS off_short
  FROM (SELECT id FROM s WHERE tenant = 3 ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 30) r;
RESET gateann.iterative_scan;
RESET gateann.search_list_size;
DROP TABLE qs;
DROP FUNCTION out_of_order(real[], int);
DROP FUNCTION skipped_rows(real[]);

-- the vector column: every indexed row IS NOT NULL, none IS NULL
SELECT count(*) FROM (SELECT id FROM s WHERE v IS NOT NULL ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 5) r;
SELECT count(*) FROM (SELECT id FROM s WHERE v IS NULL ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 5) r;

-- a filter the dictionaries prove matches nothing: no search at all
CREATE INDEX s_tenant_idx ON s USING gateann (v, tenant);
SELECT count(*) FROM (SELECT id FROM s WHERE tenant = 77 ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 5) r;
SELECT visited, reads, strategy FROM gateann_last_scan();
-- ... until a row has such a value
INSERT INTO s VALUES (5000, 77, '{1,1,1,1,1,1}');
SELECT id FROM s WHERE tenant = 77 ORDER BY v <-> '{1,1,1,1,1,1}' LIMIT 5;
DROP INDEX s_tenant_idx;

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

-- magnitudes: L2 and inner-product distances between elements beyond 1e16
-- would overflow single precision, so such vectors are refused; cosine
-- normalises them first
CREATE TABLE big (id int, v real[]);
INSERT INTO big SELECT i, ARRAY[i * 1e14, -i * 1e14, 1] FROM generate_series(1, 50) i;
CREATE INDEX big_idx ON big USING gateann (v);
SELECT id FROM big ORDER BY v <-> ARRAY[7e14, -7e14, 1]::real[] LIMIT 3;
INSERT INTO big VALUES (51, '{1e20,1e20,1e20}');
SELECT id FROM big ORDER BY v <-> '{1e20,1e20,1e20}' LIMIT 1;
DROP INDEX big_idx;
INSERT INTO big VALUES (51, '{1e20,1e20,1e20}');
CREATE INDEX big_idx ON big USING gateann (v);
CREATE INDEX big_ip ON big USING gateann (v float4_ip_ops);
CREATE INDEX big_cos ON big USING gateann (v float4_cosine_ops);
SELECT id FROM big ORDER BY v <=> '{1e20,1e20,1e20}' LIMIT 1;
DROP TABLE big;
