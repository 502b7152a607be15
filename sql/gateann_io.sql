-- Direct index reads: gateann.io_method (io_uring, pread, buffer) and
-- gateann.io_width must not change which rows a scan returns.
-- Where io_uring (or O_DIRECT) is unavailable, io_uring degrades to pread:
-- expected/gateann_io_1.out is that variant.
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;

CREATE TABLE io_items (id int PRIMARY KEY, v real[]);
INSERT INTO io_items
  SELECT i, ARRAY(SELECT rnd(i, j) * 10 FROM generate_series(1, 16) j)
  FROM generate_series(1, 5000) i;
CREATE INDEX io_items_v_idx ON io_items USING gateann (v);
CREATE TABLE io_queries AS
  SELECT q, ARRAY(SELECT rnd(q + 200000, j) * 10 FROM generate_series(1, 16) j)::real[] AS v
  FROM generate_series(1, 10) q;
-- the file now holds every page (the build flushes too)
CHECKPOINT;

SHOW gateann.io_method;
SHOW gateann.io_width;
SET gateann.io_width = 0;
SET gateann.io_width = 129;
SET gateann.io_method = 'aio';

SET enable_seqscan = off;
-- at this L every width finds the exact top 10 here, so widths agree too
SET gateann.search_list_size = 100;
-- the once-per-session NOTICE when a method degrades depends on the machine
SET client_min_messages = warning;

CREATE TEMP TABLE io_runs (method text, width int, q int, ids int[],
                           used text, reads bigint, buffer_hits bigint, direct bool,
                           from_memory bigint);
CREATE FUNCTION io_run(m text, w int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  qv real[];
  qn int;
  res int[];
  s record;
BEGIN
  PERFORM set_config('gateann.io_method', m, false);
  PERFORM set_config('gateann.io_width', w::text, false);
  FOR qn, qv IN SELECT q, v FROM io_queries ORDER BY q LOOP
    SELECT array_agg(id) INTO res
      FROM (SELECT id FROM io_items ORDER BY v <-> qv LIMIT 10) t;
    SELECT * INTO s FROM gateann_last_scan();
    INSERT INTO io_runs VALUES (m, w, qn, res, s.io_method, s.reads, s.buffer_hits,
                               s.io_direct, s.resident_hits + s.page_cache_hits);
  END LOOP;
END $$;

EXPLAIN (COSTS OFF) SELECT id FROM io_items ORDER BY v <-> '{1,2,3}' LIMIT 10;

SELECT io_run('buffer', 16);
SELECT io_run('pread', 16);
SELECT io_run('io_uring', 16);
SELECT io_run('io_uring', 4);
SELECT io_run('io_uring', 1);
SELECT io_run('pread', 1);
SELECT io_run('buffer', 4);
SELECT io_run('auto', 16);

-- what each setting used; file methods read pages from the file (and, the
-- file being up to date, never fell back to shared buffers), buffer copies
-- them out of shared buffers, auto copies what memory holds (here: shared
-- buffers hold every page) and reads the rest; every run returns the same
-- rows as buffer at width 16
SELECT r.method, r.width, string_agg(DISTINCT r.used, ',') AS used,
       bool_and(r.reads > 0) AS all_read_file,
       bool_or(r.buffer_hits > 0) AS some_buffer_reads,
       bool_and(r.from_memory > 0) AS all_from_memory,
       bool_and(cardinality(r.ids) = 10) AS ten_rows,
       bool_and(r.ids = b.ids) AS same_rows
  FROM io_runs r
  JOIN io_runs b ON b.method = 'buffer' AND b.width = 16 AND b.q = r.q
 GROUP BY r.method, r.width
 ORDER BY r.method, r.width;

-- io_direct: the buffer method reads no file; io_uring is used only on files
-- opened with O_DIRECT (without it, a file system falls back to pread)
SELECT bool_or(direct) FILTER (WHERE used = 'buffer') AS buffer_direct,
       bool_and(direct) FILTER (WHERE used = 'io_uring') IS NOT FALSE AS io_uring_direct
  FROM io_runs;

-- a cursor's scan survives a subtransaction that aborts while it is open,
-- and a transaction that aborts with the cursor open leaves no reader behind
SET gateann.io_method = io_uring;
SET gateann.io_width = 16;
BEGIN;
DECLARE c CURSOR FOR
  SELECT id FROM io_items
   ORDER BY v <-> (SELECT v FROM io_queries WHERE q = 1) LIMIT 10;
FETCH 4 FROM c;
SAVEPOINT s;
SELECT 1 / 0;
ROLLBACK TO SAVEPOINT s;
FETCH 6 FROM c;
COMMIT;
SELECT ids FROM io_runs WHERE method = 'buffer' AND width = 16 AND q = 1;

BEGIN;
DECLARE c2 CURSOR FOR
  SELECT id FROM io_items
   ORDER BY v <-> (SELECT v FROM io_queries WHERE q = 2) LIMIT 10;
FETCH 1 FROM c2;
SELECT 1 / 0;
ROLLBACK;
SELECT array_agg(id) = (SELECT ids FROM io_runs WHERE method = 'buffer' AND width = 16 AND q = 2)
       AS same_rows_after_abort
  FROM (SELECT id FROM io_items
         ORDER BY v <-> (SELECT v FROM io_queries WHERE q = 2) LIMIT 10) t;

RESET client_min_messages;
RESET gateann.io_method;
RESET gateann.io_width;
DROP FUNCTION io_run(text, int);
DROP TABLE io_items, io_queries;
