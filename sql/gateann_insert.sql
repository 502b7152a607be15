-- Inserts into a built index (FreshDiskANN insert): rows findable at once,
-- filter columns, updates, deletes + VACUUM, store growth, WAL-less tables,
-- records spanning pages, and the errors a bad row gets.
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
-- clustered vectors: 8 clusters, 16 dimensions
CREATE OR REPLACE FUNCTION cvec(i int) RETURNS real[] LANGUAGE sql IMMUTABLE
  AS $$ SELECT ARRAY(SELECT (i % 8) * 3 + rnd(i, j) FROM generate_series(1, 16) j) $$;

CREATE TABLE ins (id int PRIMARY KEY, v real[], lab int, tag text);
INSERT INTO ins SELECT i, cvec(i), i % 10, 't' || (i % 5) FROM generate_series(1, 2000) i;
CREATE INDEX ins_idx ON ins USING gateann (v, lab, tag)
  WITH (max_neighbors = 16, build_search_list_size = 48);
SET enable_seqscan = off;
SET gateann.search_list_size = 64;

-- 1. plain inserts, one statement and row by row
INSERT INTO ins SELECT i, cvec(i), i % 10, 't' || (i % 5) FROM generate_series(2001, 2600) i;
INSERT INTO ins VALUES (2601, cvec(2601), 1, 't1');
INSERT INTO ins VALUES (2602, cvec(2602), 2, 't2');
SELECT nodes, live_nodes, deleted_nodes FROM gateann_index_info('ins_idx');
SELECT * FROM gateann_verify('ins_idx');
-- every inserted row is its own nearest neighbour
SELECT count(*) FILTER (WHERE (SELECT o.id FROM ins o ORDER BY o.v <-> i.v LIMIT 1) = i.id)
         AS found_self, count(*) AS inserted
  FROM ins i WHERE i.id > 2000;
-- and so are old rows
SELECT count(*) FILTER (WHERE (SELECT o.id FROM ins o ORDER BY o.v <-> i.v LIMIT 1) = i.id)
         AS found_self, count(*) AS sampled
  FROM ins i WHERE i.id <= 2000 AND i.id % 10 = 0;

-- 2. filter columns of inserted rows, including values the build never saw
-- (not in a column's dictionary; text longer than any the build sized slots for)
INSERT INTO ins VALUES (3001, cvec(3001), 77, 'a new tag value'),
                       (3002, cvec(3002), 77, repeat('long ', 100)),
                       (3003, cvec(3003), NULL, NULL);
SELECT id FROM ins WHERE lab = 77 ORDER BY v <-> cvec(3001) LIMIT 5;
SELECT id FROM ins WHERE tag = 'a new tag value' ORDER BY v <-> cvec(1) LIMIT 5;
SELECT id FROM ins WHERE tag = repeat('long ', 100) ORDER BY v <-> cvec(1) LIMIT 5;
SELECT id FROM ins WHERE lab IS NULL ORDER BY v <-> cvec(1) LIMIT 5;
-- filtered nearest neighbours of inserted rows agree with exact search
CREATE TEMP TABLE approx AS
  SELECT i.id AS q, ARRAY(SELECT o.id FROM ins o WHERE o.lab = 0
                          ORDER BY o.v <-> i.v LIMIT 5) AS ids
    FROM ins i WHERE i.id BETWEEN 2001 AND 2600 AND i.id % 40 = 0;
SET enable_seqscan = on; SET enable_indexscan = off;
SELECT round(avg((SELECT count(*) FROM unnest(a.ids) x
                   WHERE x = ANY (ARRAY(SELECT o.id FROM ins o WHERE o.lab = 0
                                        ORDER BY o.v <-> i.v, o.id LIMIT 5)))) / 5.0, 1) >= 0.9
         AS filtered_recall_ok, count(*) AS queries
  FROM approx a JOIN ins i ON i.id = a.q;
SET enable_seqscan = off; SET enable_indexscan = on;

-- 3. non-HOT updates: the new version is found, the old one is not returned
UPDATE ins SET v = array_fill(100::real, ARRAY[16]) WHERE id = 5;
SELECT id, v <-> array_fill(100::real, ARRAY[16]) AS d
  FROM ins ORDER BY v <-> array_fill(100::real, ARRAY[16]) LIMIT 1;
SELECT id FROM ins ORDER BY v <-> cvec(5) LIMIT 1;

-- 4. deletes + VACUUM, then more inserts
DELETE FROM ins WHERE id % 3 = 0;
VACUUM ins;
SELECT live_nodes = (SELECT count(*) FROM ins WHERE v IS NOT NULL) AS live_match,
       free_slots + deleted_nodes AS gone, deleted_nodes <= 1 AS consolidated
  FROM gateann_index_info('ins_idx');
-- the inserts take freed slots: the node count does not grow
INSERT INTO ins SELECT i, cvec(i), i % 10, 't' || (i % 5) FROM generate_series(4001, 4300) i;
SELECT nodes, live_nodes = (SELECT count(*) FROM ins WHERE v IS NOT NULL) AS live_match
  FROM gateann_index_info('ins_idx');
SELECT * FROM gateann_verify('ins_idx');
SELECT count(*) FILTER (WHERE (SELECT o.id FROM ins o ORDER BY o.v <-> i.v LIMIT 1) = i.id)
         AS found_self, count(*) AS sampled
  FROM ins i WHERE i.id % 7 = 1;
-- no deleted row comes back
SELECT count(*) AS deleted_returned
  FROM (SELECT id FROM ins ORDER BY v <-> cvec(3) LIMIT 200) s WHERE id % 3 = 0 AND id < 4000;

-- 5. outgrow the in-memory stores' room (an eighth + 1024 nodes): a larger
-- copy is loaded and nothing is lost
INSERT INTO ins SELECT i, cvec(i), i % 10, 't' || (i % 5) FROM generate_series(5001, 6400) i;
SELECT nodes FROM gateann_index_info('ins_idx');
SELECT * FROM gateann_verify('ins_idx');
SELECT count(*) FILTER (WHERE (SELECT o.id FROM ins o ORDER BY o.v <-> i.v LIMIT 1) = i.id)
         AS found_self, count(*) AS sampled
  FROM ins i WHERE i.id > 5000 AND i.id % 20 = 0;

-- 6. bad rows: clear errors, nothing half-written
INSERT INTO ins VALUES (9001, '{1,2,3}', 1, 'x');
INSERT INTO ins VALUES (9002, array_fill('NaN'::real, ARRAY[16]), 1, 'x');
INSERT INTO ins VALUES (9003, NULL, 1, 'x');	-- a NULL vector: a tail record
SELECT * FROM gateann_verify('ins_idx');

-- 7. cosine: a zero vector has no direction: a tail record
CREATE FUNCTION dvec(i int) RETURNS real[] LANGUAGE sql IMMUTABLE
  AS $$ SELECT ARRAY(SELECT rnd(i, j) - 0.5 + CASE WHEN j = i % 8 + 1 THEN 2 ELSE 0 END
                       FROM generate_series(1, 16) j) $$;
CREATE TABLE cos (id int, v real[]);
INSERT INTO cos SELECT i, dvec(i) FROM generate_series(1, 300) i;
CREATE INDEX cos_idx ON cos USING gateann (v float4_cosine_ops) WITH (max_neighbors = 16);
INSERT INTO cos VALUES (301, array_fill(0::real, ARRAY[16]));
INSERT INTO cos SELECT i, dvec(i) FROM generate_series(302, 400) i;
SELECT nodes FROM gateann_index_info('cos_idx');
SELECT count(*) FILTER (WHERE (SELECT o.id FROM cos o ORDER BY o.v <=> i.v LIMIT 1) = i.id)
         AS found_self, count(*) AS inserted
  FROM cos i WHERE i.id > 301;

-- 8. unlogged and temporary tables
CREATE UNLOGGED TABLE unl (id int, v real[]);
INSERT INTO unl SELECT i, cvec(i) FROM generate_series(1, 500) i;
CREATE INDEX unl_idx ON unl USING gateann (v) WITH (max_neighbors = 16);
INSERT INTO unl SELECT i, cvec(i) FROM generate_series(501, 700) i;
SELECT count(*) FILTER (WHERE (SELECT o.id FROM unl o ORDER BY o.v <-> i.v LIMIT 1) = i.id)
         AS found_self, count(*) AS inserted
  FROM unl i WHERE i.id > 500;
CREATE TEMP TABLE tmp (id int, v real[]);
INSERT INTO tmp SELECT i, cvec(i) FROM generate_series(1, 500) i;
CREATE INDEX tmp_idx ON tmp USING gateann (v) WITH (max_neighbors = 16);
INSERT INTO tmp SELECT i, cvec(i) FROM generate_series(501, 700) i;
SELECT count(*) FILTER (WHERE (SELECT o.id FROM tmp o ORDER BY o.v <-> i.v LIMIT 1) = i.id)
         AS found_self, count(*) AS inserted
  FROM tmp i WHERE i.id > 500;
SELECT * FROM gateann_verify('unl_idx');
SELECT * FROM gateann_verify('tmp_idx');

-- 9. records spanning pages (3000 dimensions: 2 pages per record)
CREATE TABLE wide (id int, v real[]);
INSERT INTO wide SELECT i, ARRAY(SELECT (i % 4) * 3 + rnd(i, j % 4) FROM generate_series(1, 3000) j)
  FROM generate_series(1, 60) i;
CREATE INDEX wide_idx ON wide USING gateann (v) WITH (max_neighbors = 8);
INSERT INTO wide SELECT i, ARRAY(SELECT (i % 4) * 3 + rnd(i, j % 4) FROM generate_series(1, 3000) j)
  FROM generate_series(61, 80) i;
SELECT count(*) FILTER (WHERE (SELECT o.id FROM wide o ORDER BY o.v <-> i.v LIMIT 1) = i.id)
         AS found_self, count(*) AS inserted
  FROM wide i WHERE i.id > 60;
SELECT * FROM gateann_verify('wide_idx');

-- 10. every io_method returns the same rows after inserts (pages changed
-- since the files were last written are read through shared buffers)
SET gateann.io_method = 'buffer';
CREATE TEMP TABLE io_rows AS
  SELECT ARRAY(SELECT id FROM ins ORDER BY v <-> cvec(4242) LIMIT 10) AS ids;
RESET gateann.io_method;
SELECT ARRAY(SELECT id FROM ins ORDER BY v <-> cvec(4242) LIMIT 10) = ids AS auto_same
  FROM io_rows;

-- 11. a reverse edge that pushes an entry out of a full prefix may strand the
-- node it pointed to; the new node takes such nodes into its own prefix.
-- With a prefix of 4, 600 inserts into 6,000 rows left 81 nodes unreachable
-- over prefixes until the next VACUUM when they were put behind it
SET max_parallel_maintenance_workers = 0;
CREATE FUNCTION strand_vec(i int, base int) RETURNS real[] LANGUAGE sql VOLATILE
  AS $$ SELECT array_agg((i % base) + random()::real) FROM generate_series(1, 16) $$;
CREATE TABLE strand (id int, v real[], a int);
SELECT setseed(0.42);
INSERT INTO strand SELECT i, strand_vec(i, 7), i % 5 FROM generate_series(1, 6000) i;
CREATE INDEX strand_idx ON strand USING gateann (v, a) WITH (tunnel_neighbors = 4);
INSERT INTO strand SELECT i, strand_vec(i, 3), i % 5 FROM generate_series(6001, 6600) i;
SELECT unreachable_nodes FROM gateann_index_info('strand_idx');
RESET max_parallel_maintenance_workers;

-- 12. a row inserted far outside everything the codebook was trained on finds
-- itself: its own vector's PQ distances must not all round to one value
CREATE TABLE far (id int, v real[]);
INSERT INTO far SELECT i, ARRAY(SELECT rnd(i, j) - 0.5 FROM generate_series(1, 16) j)
  FROM generate_series(1, 3000) i;
CREATE INDEX far_idx ON far USING gateann (v);
SET enable_seqscan = off;
INSERT INTO far VALUES (9001, array_fill(1e8::real, ARRAY[16])),
                       (9002, array_fill(-1e7::real, ARRAY[16]));
SELECT id FROM far ORDER BY v <-> array_fill(1e8::real, ARRAY[16]) LIMIT 1;
SELECT id FROM far ORDER BY v <-> array_fill(-1e7::real, ARRAY[16]) LIMIT 1;
SELECT count(*) FILTER (WHERE (SELECT o.id FROM far o ORDER BY o.v <-> f.v LIMIT 1) = f.id)
  FROM far f WHERE f.id % 100 = 0;
CREATE TABLE far3 (id int, v real[]);
INSERT INTO far3 SELECT i, ARRAY(SELECT rnd(i, j) - 0.5 FROM generate_series(1, 3) j)
  FROM generate_series(1, 2000) i;
CREATE INDEX far3_idx ON far3 USING gateann (v);
INSERT INTO far3 VALUES (9001, '{1e9,1e9,1e9}'), (9002, '{1e15,-1e15,1e15}');
SELECT id FROM far3 ORDER BY v <-> '{1e9,1e9,1e9}' LIMIT 1;
SELECT id FROM far3 ORDER BY v <-> '{1e15,-1e15,1e15}' LIMIT 1;
SELECT * FROM gateann_verify('far3_idx');
RESET enable_seqscan;

DROP TABLE ins, cos, unl, tmp, wide, strand, far, far3;
DROP FUNCTION strand_vec;
