-- Index options: validation and reporting
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
CREATE TABLE opt (id int, v real[]);
INSERT INTO opt SELECT i, ARRAY(SELECT rnd(i, j) FROM generate_series(1, 4) j)
  FROM generate_series(1, 500) i;

-- out of range, unknown, wrong type
CREATE INDEX ON opt USING gateann (v) WITH (max_neighbors = 2);
CREATE INDEX ON opt USING gateann (v) WITH (max_neighbors = 100000);
CREATE INDEX ON opt USING gateann (v) WITH (build_search_list_size = 0);
CREATE INDEX ON opt USING gateann (v) WITH (alpha = 0.5);
CREATE INDEX ON opt USING gateann (v) WITH (alpha = 'lots');
CREATE INDEX ON opt USING gateann (v) WITH (pq_subspaces = -1);
CREATE INDEX ON opt USING gateann (v) WITH (tunnel_neighbors = 1);
CREATE INDEX ON opt USING gateann (v) WITH (no_such_option = 1);
-- combinations checked at build time
CREATE INDEX ON opt USING gateann (v) WITH (max_neighbors = 32, build_search_list_size = 16);
CREATE INDEX ON opt USING gateann (v) WITH (pq_subspaces = 5);

-- a valid set, reported by gateann_index_info
CREATE INDEX opt_idx ON opt USING gateann (v)
  WITH (max_neighbors = 16, build_search_list_size = 40, alpha = 1.1,
        pq_subspaces = 4, tunnel_neighbors = 8);
SELECT nodes, dims, max_neighbors, pq_subspaces, tunnel_neighbors, pq_bytes
  FROM gateann_index_info('opt_idx');
SELECT reloptions FROM pg_class WHERE relname = 'opt_idx';

-- tunnel_neighbors can change without a rebuild; above max_neighbors it is capped
ALTER INDEX opt_idx SET (tunnel_neighbors = 4);
SELECT tunnel_neighbors FROM gateann_index_info('opt_idx');
ALTER INDEX opt_idx SET (tunnel_neighbors = 100);
SELECT tunnel_neighbors FROM gateann_index_info('opt_idx');
-- without the option, the prefix the build ordered and linked lists for
ALTER INDEX opt_idx RESET (tunnel_neighbors);
SELECT tunnel_neighbors FROM gateann_index_info('opt_idx');
-- 0 (the default) lets the build choose: 32 here, capped at max_neighbors
-- (gateann_tunnel_choice below shows it widened)
CREATE INDEX opt_auto_idx ON opt USING gateann (v) WITH (tunnel_neighbors = 0);
SELECT max_neighbors, tunnel_neighbors FROM gateann_index_info('opt_auto_idx');
DROP INDEX opt_auto_idx;

SET enable_seqscan = off;
SELECT count(*) FILTER (WHERE (SELECT o.id FROM opt o ORDER BY o.v <-> p.v LIMIT 1) = p.id)
  AS found_self FROM opt p WHERE p.id % 50 = 0;

-- GUC ranges
SET gateann.search_list_size = 0;
SET gateann.search_list_size = 'many';
SET gateann.max_scan_tuples = -5;
SET gateann.search_list_size = 40;
SHOW gateann.search_list_size;
RESET gateann.search_list_size;

-- not a gateann index, not an index at all, NULL
CREATE INDEX opt_btree ON opt (id);
SELECT * FROM gateann_index_info('opt_btree');
SELECT * FROM gateann_index_info('opt');
SELECT * FROM gateann_index_info(NULL);
SELECT * FROM gateann_index_info(0);
DROP TABLE opt;
