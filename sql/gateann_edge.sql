-- Edge cases and bad input: always rows or a clear ERROR
CREATE EXTENSION IF NOT EXISTS gateann;
SET enable_seqscan = off;

-- empty table
CREATE TABLE e (id int, v real[]);
CREATE INDEX e_idx ON e USING gateann (v);
SELECT nodes, dims FROM gateann_index_info('e_idx');
SELECT id FROM e ORDER BY v <-> '{1,2}' LIMIT 5;
-- an index built on no rows is set up by its first row (see gateann_retrain)
INSERT INTO e VALUES (1, '{1,2}');
SELECT nodes, dims FROM gateann_index_info('e_idx');
SELECT id FROM e ORDER BY v <-> '{1,2}' LIMIT 5;
-- a NULL vector is kept as a tail record (see gateann_nulls)
INSERT INTO e VALUES (2, NULL);
SELECT count(*) FROM e;
DROP TABLE e;

-- one row
CREATE TABLE one (id int, v real[]);
INSERT INTO one VALUES (1, '{1,2,3}');
CREATE INDEX ON one USING gateann (v);
SELECT id, v <-> '{0,0,0}' AS d FROM one ORDER BY v <-> '{0,0,0}' LIMIT 5;
DROP TABLE one;

-- k larger than the table; rows with NULL vectors come last (see gateann_nulls)
CREATE TABLE small (id int, v real[]);
INSERT INTO small SELECT i, ARRAY[i, i * 2]::real[] FROM generate_series(1, 7) i;
INSERT INTO small VALUES (8, NULL), (9, NULL);
CREATE INDEX small_idx ON small USING gateann (v);
SELECT nodes FROM gateann_index_info('small_idx');
SELECT id, round((v <-> '{3.1,6.1}')::numeric, 4) AS d FROM small ORDER BY v <-> '{3.1,6.1}' LIMIT 100;
-- a NULL query vector: every distance is NULL, rows come in id order
SELECT id FROM small ORDER BY v <-> (SELECT NULL::real[]) LIMIT 3;
-- IS NULL on the vector column: the rows with NULL vectors
SELECT id FROM small WHERE v IS NULL ORDER BY v <-> '{1,1}' LIMIT 3;
DROP TABLE small;

-- duplicates: 40 copies of one vector among others
CREATE TABLE dup (id int, v real[]);
INSERT INTO dup SELECT i, '{5,5,5,5}' FROM generate_series(1, 40) i;
INSERT INTO dup SELECT i, ARRAY[i, -i, i % 7, 1]::real[] FROM generate_series(41, 400) i;
CREATE INDEX ON dup USING gateann (v);
SELECT count(*) FILTER (WHERE d = 0) AS zero_distance, count(*) AS n
  FROM (SELECT v <-> '{5,5,5,5}' AS d FROM dup ORDER BY v <-> '{5,5,5,5}' LIMIT 45) s;
DROP TABLE dup;

-- copies of many vectors: 150 vectors, each stored 12 times; the build
-- links a later copy through the first (graph.c, visit_copy), and a query
-- for each vector still finds all 12 of its copies
CREATE TABLE copies (id int, k int, v real[]);
INSERT INTO copies
  SELECT i, i % 150,
         ARRAY(SELECT sin((i % 150) * 7.1 + j * 1.3)::real FROM generate_series(1, 16) j)
  FROM generate_series(1, 1800) i;
CREATE INDEX copies_idx ON copies USING gateann (v);
SELECT count(*) AS vectors, count(*) FILTER (WHERE found < 12) AS missing_a_copy
  FROM (SELECT t.k, (SELECT count(*) FROM
                       (SELECT c.k FROM copies c ORDER BY c.v <-> t.v LIMIT 12) s
                     WHERE s.k = t.k) AS found
          FROM (SELECT DISTINCT ON (k) k, v FROM copies ORDER BY k) t) f;
SELECT * FROM gateann_verify('copies_idx');
DROP TABLE copies;

-- all vectors identical
CREATE TABLE same (id int, v real[]);
INSERT INTO same SELECT i, '{1,1,1}' FROM generate_series(1, 120) i;
CREATE INDEX ON same USING gateann (v);
SELECT count(*), count(DISTINCT id), max(v <-> '{1,1,1}') FROM
  (SELECT id, v FROM same ORDER BY v <-> '{1,1,1}' LIMIT 500) s;
DROP TABLE same;

-- mixed dimensions in one column: the build fails naming the row
CREATE TABLE mixed (id int, v real[]);
INSERT INTO mixed VALUES (1, '{1,2,3}'), (2, '{1,2,3}'), (3, '{1,2}');
CREATE INDEX ON mixed USING gateann (v);
-- nothing half-built is left behind
SELECT count(*) FROM pg_indexes WHERE tablename = 'mixed';
-- once the bad row is deleted the index builds (dead rows are skipped)
DELETE FROM mixed WHERE id = 3;
CREATE INDEX mixed_idx ON mixed USING gateann (v);
-- a query of the wrong dimension is an error too
SELECT id FROM mixed ORDER BY v <-> '{1,2}' LIMIT 1;
DROP TABLE mixed;

-- NaN and infinity
CREATE TABLE bad (id int, v real[]);
INSERT INTO bad VALUES (1, '{1,2,3}'), (2, '{1,NaN,3}');
CREATE INDEX ON bad USING gateann (v);
UPDATE bad SET v = '{1,2,Infinity}' WHERE id = 2;
CREATE INDEX ON bad USING gateann (v);
DELETE FROM bad WHERE id = 2;
CREATE INDEX bad_idx ON bad USING gateann (v);
SELECT id FROM bad ORDER BY v <-> '{1,NaN,3}' LIMIT 1;
SELECT id FROM bad ORDER BY v <-> '{-Infinity,1,3}' LIMIT 1;
DROP TABLE bad;

-- arrays that are not vectors
CREATE TABLE shape (id int, v real[]);
INSERT INTO shape VALUES (1, '{{1,2},{3,4}}');
CREATE INDEX ON shape USING gateann (v);
TRUNCATE shape;
INSERT INTO shape VALUES (1, '{1,NULL,3}');
CREATE INDEX ON shape USING gateann (v);
TRUNCATE shape;
INSERT INTO shape VALUES (1, '{}');
CREATE INDEX ON shape USING gateann (v);
DROP TABLE shape;

-- dimensions: 16000 is the limit; a 16000-dim record spans several pages
CREATE TABLE wide (id int, v real[]);
INSERT INTO wide SELECT i, array_fill(i::real, ARRAY[16000]) FROM generate_series(1, 3) i;
CREATE INDEX wide_idx ON wide USING gateann (v);
SELECT nodes, dims, pq_subspaces, pages > 3 * 8 AS multi_page FROM gateann_index_info('wide_idx');
SELECT id FROM wide ORDER BY v <-> array_fill(2.2::real, ARRAY[16000]) LIMIT 3;
INSERT INTO wide VALUES (4, array_fill(1::real, ARRAY[16001]));
-- an insert of a record spanning 8 pages (written in several WAL records)
INSERT INTO wide VALUES (5, array_fill(2.5::real, ARRAY[16000]));
SELECT id FROM wide ORDER BY v <-> array_fill(2.5::real, ARRAY[16000]) LIMIT 2;
SELECT * FROM gateann_verify('wide_idx');
DROP INDEX wide_idx;
CREATE INDEX ON wide USING gateann (v);
DROP TABLE wide;

-- unsupported column types and operator classes
CREATE TABLE types (id int, p point, v real[], n int);
CREATE INDEX ON types USING gateann (p);
CREATE INDEX ON types USING gateann (n);
CREATE INDEX ON types USING gateann (n, v);
CREATE INDEX ON types USING gateann (v float4_filter_ops);
DROP TABLE types;

-- an operator the index's operator class does not have: no index scan
CREATE TABLE ops (id int, v real[]);
INSERT INTO ops SELECT i, ARRAY[i, 1]::real[] FROM generate_series(1, 20) i;
CREATE INDEX ON ops USING gateann (v float4_l2_ops);
-- (PostgreSQL 18 marks disabled plan nodes; leave that line out)
CREATE FUNCTION plan(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF l NOT LIKE '%Disabled: true%' THEN RETURN NEXT l; END IF;
  END LOOP;
END $$;
SELECT plan($$SELECT id FROM ops ORDER BY v <#> '{1,1}' LIMIT 1$$);
SELECT plan($$SELECT id FROM ops ORDER BY v <-> '{1,1}' LIMIT 1$$);
-- descending order is not an index order
SELECT plan($$SELECT id FROM ops ORDER BY v <-> '{1,1}' DESC LIMIT 1$$);
DROP FUNCTION plan(text);
DROP TABLE ops;

-- a build that needs more than maintenance_work_mem, even in partitions,
-- stops with a clear error whose hint is enough, both figures: the scan
-- goes on counting the table's rows (it asked for 2 MB here from the rows
-- seen so far, then more on each retry)
CREATE TABLE mem (id int, v real[]);
INSERT INTO mem SELECT i, array_fill((i % 13)::real, ARRAY[256]) FROM generate_series(1, 3000) i;
SET maintenance_work_mem = '1MB';
CREATE INDEX ON mem USING gateann (v);
DO $$
DECLARE hint text;
BEGIN
  BEGIN
    CREATE INDEX mem_try ON mem USING gateann (v);
  EXCEPTION WHEN program_limit_exceeded THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
  END;
  PERFORM set_config('maintenance_work_mem', substring(hint from '''(\d+MB)'''), false);
  CREATE INDEX mem_try ON mem USING gateann (v);
  RAISE NOTICE 'the hint''s maintenance_work_mem was enough';
  DROP INDEX mem_try;
  PERFORM set_config('maintenance_work_mem', substring(hint from 'at least (\d+) MB') || 'MB', false);
  CREATE INDEX mem_try ON mem USING gateann (v);
  RAISE NOTICE 'the hint''s maintenance_work_mem for partitions was enough';
END $$;
SELECT * FROM gateann_verify('mem_try');
DROP INDEX mem_try;
RESET maintenance_work_mem;
CREATE INDEX mem_idx ON mem USING gateann (v);
SELECT nodes FROM gateann_index_info('mem_idx');
DROP TABLE mem;
