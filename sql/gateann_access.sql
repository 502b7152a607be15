-- Who may call gateann's functions, as pg_prewarm and amcheck decide:
-- gateann_index_info needs SELECT on the table; gateann_verify (a walk of
-- the whole index that holds off its writers) and gateann_graph (every heap
-- TID) ownership of the table or
-- membership in pg_maintain (PostgreSQL 17 on) or pg_monitor;
-- gateann_prewarm (shared memory it may take from other indexes) ownership
-- or pg_maintain.  And messages that name what to fix.
CREATE EXTENSION IF NOT EXISTS gateann;
\set VERBOSITY terse
CREATE TABLE acc (id int, v real[], lab int);
INSERT INTO acc SELECT i, ARRAY[i % 7, i % 11, i % 13]::real[], i % 5 FROM generate_series(1, 300) i;
CREATE INDEX acc_idx ON acc USING gateann (v, lab);
CREATE ROLE gateann_nobody;
CREATE ROLE gateann_reader;
GRANT SELECT ON acc TO gateann_reader;

SET ROLE gateann_nobody;
SELECT nodes FROM gateann_index_info('acc_idx');
SELECT * FROM gateann_verify('acc_idx');
SELECT gateann_prewarm('acc_idx') > 0;
RESET ROLE;

SET ROLE gateann_reader;
SELECT nodes FROM gateann_index_info('acc_idx');
SELECT * FROM gateann_verify('acc_idx');
SELECT count(*) FROM gateann_graph('acc_idx');
SELECT gateann_prewarm('acc_idx') > 0;
RESET ROLE;

GRANT pg_monitor TO gateann_nobody;
SET ROLE gateann_nobody;
SELECT count(*) AS problems FROM gateann_verify('acc_idx');
SELECT count(*) AS nodes FROM gateann_graph('acc_idx');
SELECT gateann_prewarm('acc_idx') > 0;
RESET ROLE;

ALTER TABLE acc OWNER TO gateann_reader;
SET ROLE gateann_reader;
SELECT gateann_prewarm('acc_idx') > 0 AS prewarmed;
SELECT count(*) AS problems FROM gateann_verify('acc_idx');
RESET ROLE;

-- an option combination the next build would refuse is refused when set
ALTER INDEX acc_idx SET (max_neighbors = 200);
ALTER INDEX acc_idx SET (max_neighbors = 32, build_search_list_size = 64);
SELECT reloptions FROM pg_class WHERE relname = 'acc_idx';

-- the first row of an index built on no rows, which pq_subspaces does not fit
CREATE TABLE acc_empty (v real[]);
CREATE INDEX acc_empty_idx ON acc_empty USING gateann (v) WITH (pq_subspaces = 16);
INSERT INTO acc_empty VALUES ('{1,2,3,4,5,6,7,8}');

-- a partitioned gateann index holds no data of its own
CREATE TABLE acc_part (id int, v real[]) PARTITION BY RANGE (id);
CREATE TABLE acc_part_1 PARTITION OF acc_part FOR VALUES FROM (0) TO (100);
CREATE INDEX acc_part_idx ON acc_part USING gateann (v);
SELECT * FROM gateann_index_info('acc_part_idx');
SELECT count(*) FROM pg_partition_tree('acc_part_idx') WHERE isleaf;

DROP TABLE acc, acc_empty, acc_part;
DROP ROLE gateann_nobody, gateann_reader;
DROP EXTENSION gateann;
