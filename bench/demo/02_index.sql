-- gateann demo, step 2: build the index (vector column first, then the filter columns).
\set ON_ERROR_STOP 1
SET maintenance_work_mem = '1GB';
\echo '--- CREATE INDEX docs_gateann_idx ON docs USING gateann (embedding, tenant, category)'
\timing on
CREATE INDEX docs_gateann_idx ON docs USING gateann (embedding, tenant, category);
\timing off
SELECT pg_size_pretty(pg_relation_size('docs_gateann_idx')) AS index_size;
\echo
\echo '--- gateann_index_info(''docs_gateann_idx'')'
\x on
SELECT * FROM gateann_index_info('docs_gateann_idx');
\x off
