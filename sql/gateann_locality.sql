-- locality_order: CREATE INDEX numbers the nodes cluster by cluster (k-means
-- on the vectors) instead of in heap order, and must keep every node's
-- vector, heap TID and filter values together while renumbering: a mix-up
-- would return wrong rows, or rows that fail the filter (the filter copies
-- in the records decide without a recheck).
CREATE EXTENSION IF NOT EXISTS gateann;
SELECT setseed(0.31);
CREATE TABLE lo_centers AS
  SELECT c, array_agg((random() * 2 - 1)::real ORDER BY d) AS v
  FROM generate_series(0, 29) c, generate_series(1, 16) d GROUP BY c;
-- clusters interleaved in heap order (i % 30), so the two orders differ
CREATE TABLE lo (id int, label int, v real[]);
INSERT INTO lo
  SELECT i, i % 7,
         (SELECT array_agg((u.x + 0.2 * (random() * 2 - 1))::real ORDER BY u.o)
            FROM unnest(c.v) WITH ORDINALITY u(x, o))
  FROM generate_series(1, 3000) i JOIN lo_centers c ON c.c = i % 30;
CREATE TABLE lo_q AS SELECT k, (SELECT v FROM lo WHERE id = k * 149) AS q FROM generate_series(1, 20) k;
CREATE TEMP TABLE lo_exact AS
  SELECT k, ARRAY(SELECT id FROM lo ORDER BY v <-> q LIMIT 10) AS ids,
            ARRAY(SELECT id FROM lo WHERE label = 3 ORDER BY v <-> q LIMIT 10) AS fids
  FROM lo_q;
-- recall@10 of plain and filtered (label = 3) searches, and how many
-- returned rows fail the filter
CREATE FUNCTION lo_check(OUT recall numeric, OUT filtered_recall numeric, OUT wrong_label bigint)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('gateann.search_list_size', '100', true);
  SELECT avg(cardinality(ARRAY(SELECT unnest(a.ids) INTERSECT SELECT unnest(e.ids))) / 10.0),
         avg(cardinality(ARRAY(SELECT unnest(a.fids) INTERSECT SELECT unnest(e.fids))) / 10.0)
    INTO recall, filtered_recall
    FROM lo_exact e JOIN lo_q USING (k),
         LATERAL (SELECT ARRAY(SELECT id FROM lo ORDER BY v <-> lo_q.q LIMIT 10) AS ids,
                         ARRAY(SELECT id FROM lo WHERE label = 3 ORDER BY v <-> lo_q.q LIMIT 10) AS fids) a;
  SELECT count(*) INTO wrong_label
    FROM lo_q, LATERAL (SELECT label FROM lo WHERE label = 3 ORDER BY v <-> lo_q.q LIMIT 10) r
   WHERE r.label <> 3;
END $$;

CREATE INDEX ON lo USING gateann (v, label) WITH (locality_order = 'sometimes');
SET maintenance_work_mem = '64MB';
SET max_parallel_maintenance_workers = 0;

-- heap order
CREATE INDEX lo_idx ON lo USING gateann (v, label) WITH (locality_order = off);
SELECT count(*) AS problems FROM gateann_verify('lo_idx');
SELECT recall >= 0.95 AS recall_ok, filtered_recall >= 0.95 AS filtered_ok, wrong_label FROM lo_check();
DROP INDEX lo_idx;

-- cluster order (the default)
CREATE INDEX lo_idx ON lo USING gateann (v, label);
SELECT reloptions FROM pg_class WHERE relname = 'lo_idx';
SELECT count(*) AS problems FROM gateann_verify('lo_idx');
SELECT recall >= 0.95 AS recall_ok, filtered_recall >= 0.95 AS filtered_ok, wrong_label FROM lo_check();
-- every row finds itself: TIDs went with their vectors
SET enable_seqscan = off;
SELECT count(*) FILTER (WHERE (SELECT o.id FROM lo o ORDER BY o.v <-> p.v LIMIT 1) = p.id)
  AS found_self, count(*) AS probes FROM lo p WHERE p.id % 100 = 0;
RESET enable_seqscan;

-- inserts after a renumbered build get the next ids; deletes and VACUUM
-- (which repairs the in-neighbors of deleted nodes) work on the new ids
INSERT INTO lo SELECT 3000 + i, 3, (SELECT v FROM lo WHERE id = i) FROM generate_series(1, 200) i;
DELETE FROM lo WHERE id % 10 = 1 AND id <= 3000;
VACUUM lo;
SELECT count(*) AS problems FROM gateann_verify('lo_idx');
SET enable_seqscan = off;
SET gateann.search_list_size = 100;
-- the copy of row i (label 3) is as near to row i's vector as row i itself
SELECT count(*) FILTER (WHERE (SELECT o.id FROM lo o WHERE label = 3 ORDER BY o.v <-> p.v LIMIT 1) IN (p.id, p.id + 3000))
  AS found_copy, count(*) AS probes FROM lo p WHERE p.id % 20 = 0 AND p.id <= 200;
RESET gateann.search_list_size;
RESET enable_seqscan;
-- one dimension: rows narrower than a heap TID (the renumbering moves both
-- through one row buffer, which must hold the wider)
CREATE TABLE lo1 (id int, v real[]);
INSERT INTO lo1 SELECT i, ARRAY[((i * 7919) % 2000)::real] FROM generate_series(1, 2000) i;
CREATE INDEX lo1_idx ON lo1 USING gateann (v);
SELECT count(*) AS problems FROM gateann_verify('lo1_idx');
SET enable_seqscan = off;
SELECT id, v FROM lo1 ORDER BY v <-> '{1000.2}' LIMIT 3;
RESET enable_seqscan;
RESET maintenance_work_mem;
RESET max_parallel_maintenance_workers;
DROP FUNCTION lo_check();
DROP TABLE lo, lo_q, lo_centers, lo1;
