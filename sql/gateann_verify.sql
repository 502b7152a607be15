-- gateann_verify(regclass): a structural check, one row per problem found
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
CREATE TABLE vf (id int, tenant int, tags int[], v real[]);
INSERT INTO vf SELECT i, i % 7, ARRAY[i % 5], ARRAY(SELECT rnd(i, j) FROM generate_series(1, 8) j)
  FROM generate_series(1, 2000) i;
CREATE INDEX vf_idx ON vf USING gateann (v, tenant, tags);
-- healthy: no rows, before and after the stores are loaded
SELECT * FROM gateann_verify('vf_idx');
SELECT gateann_prewarm('vf_idx') > 0 AS loaded;
SELECT * FROM gateann_verify('vf_idx');
-- gateann_graph(regclass): every node once, its row's TID, lists within
-- max_neighbors naming nodes of the graph and never the node itself, the
-- entry points flagged
SELECT count(*) = (SELECT live_nodes FROM gateann_index_info('vf_idx')) AS every_node,
       count(*) FILTER (WHERE entry_point) =
         (SELECT entry_points FROM gateann_index_info('vf_idx')) AS entry_points,
       bool_and(NOT (node = ANY (neighbors))) AS no_self_edges,
       bool_and(cardinality(neighbors) BETWEEN 1 AND
         (SELECT max_neighbors FROM gateann_index_info('vf_idx'))) AS lists_in_range,
       count(DISTINCT heap_tid) AS rows
  FROM gateann_graph('vf_idx');
SELECT count(*) AS rows_of_the_table FROM gateann_graph('vf_idx') g JOIN vf ON vf.ctid = g.heap_tid;
SELECT count(*) AS edges_to_no_node
  FROM (SELECT unnest(neighbors) AS n FROM gateann_graph('vf_idx')) e
  WHERE n NOT IN (SELECT node FROM gateann_graph('vf_idx'));
-- after DELETE + VACUUM (deleted flags and counts agree)
DELETE FROM vf WHERE id % 3 = 0;
-- (rows deleted from the table stay nodes until VACUUM, which frees their
-- slots, or flags deleted a node it keeps)
SELECT count(*) FILTER (WHERE deleted) AS deleted, count(*) AS nodes FROM gateann_graph('vf_idx');
VACUUM vf;
SELECT count(*) FILTER (WHERE deleted) AS deleted, count(*) AS nodes FROM gateann_graph('vf_idx');
SELECT deleted_nodes + free_slots AS gone FROM gateann_index_info('vf_idx');
SELECT * FROM gateann_verify('vf_idx');
REINDEX INDEX vf_idx;
SELECT count(*) FROM gateann_verify('vf_idx');
-- an empty index, and records spanning pages
TRUNCATE vf;
SELECT count(*) FROM gateann_verify('vf_idx');
CREATE TABLE vw (id int, v real[]);
INSERT INTO vw SELECT i, array_fill(i::real, ARRAY[3000]) FROM generate_series(1, 20) i;
CREATE INDEX vw_idx ON vw USING gateann (v);
SELECT count(*) FROM gateann_verify('vw_idx');
-- not a gateann index, NULL
CREATE INDEX vf_btree ON vf (id);
SELECT * FROM gateann_verify('vf_btree');
SELECT * FROM gateann_verify('vf');
SELECT count(*) FROM gateann_verify(NULL);
DROP TABLE vf, vw;
-- an index a failed CREATE INDEX CONCURRENTLY left invalid: every function
-- says so, rather than reading pages that may not exist
CREATE TABLE bad_dims (id int, v real[]);
INSERT INTO bad_dims VALUES (1, '{1,2}'), (2, '{1,2,3}');
CREATE INDEX CONCURRENTLY bad_dims_idx ON bad_dims USING gateann (v);
SELECT indisvalid FROM pg_index WHERE indexrelid = 'bad_dims_idx'::regclass;
SELECT * FROM gateann_verify('bad_dims_idx');
SELECT nodes FROM gateann_index_info('bad_dims_idx');
SELECT gateann_prewarm('bad_dims_idx');
SELECT count(*) FROM gateann_graph('bad_dims_idx');
DELETE FROM bad_dims WHERE id = 2;
REINDEX INDEX bad_dims_idx;
SELECT count(*) FROM gateann_verify('bad_dims_idx');
DROP TABLE bad_dims;
