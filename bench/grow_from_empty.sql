-- An index created on an empty table and grown by inserts to 40,000 rows of
-- 128 dimensions (retrained at 64, 256, 1,024, 4,096, 16,384 and 32,768 live
-- rows), against CREATE INDEX after loading the same rows: time of each step,
-- of the inserts that retrain, and recall@10 of 50 queries at L = 100.
-- Rows from the benchmark's 100K dataset (label10 as the filter column):
--   bench/.venv/bin/python bench/gateann_bench gen --n 100000 --load    (libpq env vars)
--   psql -X -f bench/grow_from_empty.sql
-- (bench/RESULTS.md "Growing from an empty table"; uses tables grow_*.)
\set ON_ERROR_STOP on
\timing on
SET client_min_messages = warning;
DROP TABLE IF EXISTS grow_src, grow, grow_built, grow_q;
CREATE TABLE grow_src AS
  SELECT id::int AS id, label10 AS lab, embedding AS v
    FROM bench_c100k_d128_i16_s42 WHERE id <= 40050;
CREATE TABLE grow_q AS SELECT id, lab, v FROM grow_src WHERE id > 40000;

-- 1. grown from empty
CREATE TABLE grow (id int, v real[], lab int);
CREATE INDEX grow_idx ON grow USING gateann (v, lab);
INSERT INTO grow SELECT id, v, lab FROM grow_src WHERE id < 16384;
SELECT nodes, pq_training_rows FROM gateann_index_info('grow_idx');
-- the insert that retrains at 16,384 live rows
INSERT INTO grow SELECT id, v, lab FROM grow_src WHERE id = 16384;
INSERT INTO grow SELECT id, v, lab FROM grow_src WHERE id BETWEEN 16385 AND 32767;
-- the insert that retrains at 32,768 live rows (the last time)
INSERT INTO grow SELECT id, v, lab FROM grow_src WHERE id = 32768;
INSERT INTO grow SELECT id, v, lab FROM grow_src WHERE id BETWEEN 32769 AND 40000;
SELECT nodes, pq_training_rows, pages FROM gateann_index_info('grow_idx');

-- 2. built after loading
CREATE TABLE grow_built AS SELECT id, v, lab FROM grow_src WHERE id <= 40000;
CREATE INDEX grow_built_idx ON grow_built USING gateann (v, lab);
SELECT nodes, pq_training_rows, pages FROM gateann_index_info('grow_built_idx');

-- 3. recall@10 at L = 100, unfiltered and lab = q.lab, against exact search
\timing off
CREATE OR REPLACE FUNCTION grow_recall(tab regclass, filtered bool) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE
  total numeric := 0;
  q record;
  approx int[];
  exact int[];
BEGIN
  FOR q IN SELECT * FROM grow_q LOOP
    SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = on;
    SET LOCAL gateann.search_list_size = 100;
    EXECUTE format('SELECT array_agg(id) FROM (SELECT id FROM %s WHERE NOT $2 OR lab = $3
                    ORDER BY v <-> $1 LIMIT 10) s', tab) INTO approx USING q.v, filtered, q.lab;
    SET LOCAL enable_seqscan = on; SET LOCAL enable_indexscan = off;
    EXECUTE format('SELECT array_agg(id) FROM (SELECT id FROM %s WHERE NOT $2 OR lab = $3
                    ORDER BY v <-> $1, id LIMIT 10) s', tab) INTO exact USING q.v, filtered, q.lab;
    total := total + (SELECT count(*) FROM unnest(approx) x WHERE x = ANY (exact));
  END LOOP;
  RETURN round(total / (10 * (SELECT count(*) FROM grow_q)), 3);
END $$;
SELECT 'grown from empty' AS index, grow_recall('grow', false) AS recall,
       grow_recall('grow', true) AS filtered_recall
UNION ALL
SELECT 'built after loading', grow_recall('grow_built', false), grow_recall('grow_built', true);
