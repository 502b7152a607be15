-- Filter columns: later index columns are stored in the index; conditions on
-- them are index conditions, checked in memory and verified on the records
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE OR REPLACE FUNCTION rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
CREATE TABLE docs (id int, tenant int, lang text, tags int[], price numeric,
                   published date, ok bool, u uuid, ts timestamptz, score float8,
                   small int2, big int8, words text[], v real[]);
INSERT INTO docs
  SELECT i, i % 7,
         CASE WHEN i % 5 = 0 THEN NULL ELSE (ARRAY['en','de','fr'])[1 + i % 3] END,
         ARRAY[i % 4, i % 9], (i % 100) / 3.0, date '2024-01-01' + i % 365,
         i % 2 = 0, md5(i::text)::uuid, timestamptz '2024-01-01 00:00+00' + i * interval '1 hour',
         i * 0.5, (i % 100)::int2, i::int8 * 1000000000, ARRAY['w' || i % 11],
         ARRAY(SELECT rnd(i, j) * 3 FROM generate_series(1, 8) j)
  FROM generate_series(1, 2000) i;
-- a long value does not fit the record: stored as overflow
UPDATE docs SET lang = repeat('x', 2000) WHERE id = 1;

-- default operator classes for every supported filter type
CREATE INDEX docs_idx ON docs USING gateann
  (v, tenant, lang, tags, price, published, ok, u, ts, score, small, big, words);
SELECT nodes, dims FROM gateann_index_info('docs_idx');
SELECT opcname FROM pg_index i, unnest(i.indclass) WITH ORDINALITY AS c(oid, n)
  JOIN pg_opclass o ON o.oid = c.oid
  WHERE i.indexrelid = 'docs_idx'::regclass ORDER BY n;
-- varchar uses the text class
CREATE TABLE vc (id int, name varchar(20), v real[]);
INSERT INTO vc VALUES (1, 'a', '{1,2}'), (2, 'b', '{2,3}');
CREATE INDEX ON vc USING gateann (v, name);
DROP TABLE vc;
-- an expression column
CREATE INDEX docs_expr_idx ON docs USING gateann (v, (tenant * 2), lower(lang));
DROP INDEX docs_expr_idx;

SET enable_seqscan = off;
-- conditions on filter columns are index conditions, results are exact
EXPLAIN (COSTS OFF)
  SELECT id FROM docs WHERE tenant = 3 AND lang = 'de' ORDER BY v <-> '{1,1,1,1,1,1,1,1}' LIMIT 10;
SELECT count(*), bool_and(tenant = 3 AND lang = 'de')
  FROM (SELECT * FROM docs WHERE tenant = 3 AND lang = 'de'
        ORDER BY v <-> '{1,1,1,1,1,1,1,1}' LIMIT 10) r;
SELECT count(*), bool_and(tags @> '{2}' AND published >= '2024-06-01')
  FROM (SELECT * FROM docs WHERE tags @> '{2}' AND published >= '2024-06-01'
        ORDER BY v <-> '{1,1,1,1,1,1,1,1}' LIMIT 10) r;

-- IS NULL / IS NOT NULL are evaluated in the index from the stored copies
EXPLAIN (COSTS OFF)
  SELECT id FROM docs WHERE lang IS NULL ORDER BY v <-> '{1,1,1,1,1,1,1,1}' LIMIT 10;
SELECT count(*), bool_and(lang IS NULL)
  FROM (SELECT lang FROM docs WHERE lang IS NULL ORDER BY v <-> '{1,1,1,1,1,1,1,1}' LIMIT 10) r;
SELECT count(*) FROM (SELECT id FROM docs WHERE lang IS NULL
                      ORDER BY v <-> '{1,1,1,1,1,1,1,1}' LIMIT 5000) r;
SELECT count(*) FROM (SELECT id FROM docs WHERE lang IS NOT NULL AND tenant IS NOT NULL
                      ORDER BY v <-> '{1,1,1,1,1,1,1,1}' LIMIT 5000) r;
SELECT count(*) FROM (SELECT id FROM docs WHERE lang IS NULL AND lang IS NOT NULL
                      ORDER BY v <-> '{1,1,1,1,1,1,1,1}' LIMIT 10) r;
-- the overflowed row is still found (its lang is not NULL)
SELECT bool_or(id = 1) FROM (SELECT id FROM docs WHERE lang IS NOT NULL
                             ORDER BY v <-> '{1,1,1,1,1,1,1,1}' LIMIT 5000) r;
DROP TABLE docs;
