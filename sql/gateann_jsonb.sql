-- jsonb filter columns: @> (containment), ? / ?| / ?& (top-level keys),
-- @@ and @? (jsonpath) become index conditions; the filter store keeps
-- Bloom bits of each value's leaves and keys, so a gate search rules nodes
-- out before any read, and the operators verify what it reads.
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE FUNCTION jb_rnd(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1)::real $$;
CREATE TABLE jb (id int, v real[], meta jsonb);
INSERT INTO jb SELECT i, ARRAY(SELECT jb_rnd(i, j) FROM generate_series(1, 8) j),
  jsonb_build_object('cat', i % 10, 'lang', (ARRAY['en', 'de', 'fr'])[1 + i % 3],
                     'tags', jsonb_build_array(i % 7, 'x' || (i % 5)),
                     'nested', jsonb_build_object('a', jsonb_build_object('b', i % 4))) ||
  CASE WHEN i % 50 = 0 THEN '{"rare": true}'::jsonb ELSE '{}' END
  FROM generate_series(1, 4000) i;
-- no metadata; a top-level array and a raw scalar; values too long for the
-- index's copy (the executor rechecks those rows)
INSERT INTO jb VALUES (-1, ARRAY(SELECT jb_rnd(-1, j) FROM generate_series(1, 8) j), NULL),
  (-2, ARRAY(SELECT jb_rnd(-2, j) FROM generate_series(1, 8) j), '["rare", "x1"]'),
  (-3, ARRAY(SELECT jb_rnd(-3, j) FROM generate_series(1, 8) j), '"rare"');
INSERT INTO jb SELECT -10 - i, ARRAY(SELECT jb_rnd(-10 - i, j) FROM generate_series(1, 8) j),
  jsonb_build_object('cat', 3, 'rare', true, 'long', repeat('z', 400)) FROM generate_series(0, 19) i;
CREATE INDEX jb_idx ON jb USING gateann (v, meta);
SELECT opcname, amvalidate(oid) FROM pg_opclass WHERE opcname = 'jsonb_filter_ops';
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM jb WHERE meta @> '{"cat": 3}' ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id FROM jb WHERE meta ? 'rare' AND meta ?| '{a,b}' AND meta ?& '{cat,lang}'
  ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;

-- an expression column (meta -> 'lang') takes equality of jsonb values: the
-- form Django writes for meta__lang = 'de'
CREATE INDEX jb_lang ON jb USING gateann (v, (meta -> 'lang'), (meta -> 'tags'));
EXPLAIN (COSTS OFF) SELECT id FROM jb WHERE meta -> 'lang' = '"de"'
  ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;

-- an index scan returns a sequential scan's rows for each form
CREATE FUNCTION jb_ids(pred text, use_index bool) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  EXECUTE format('SET LOCAL enable_indexscan = %s', use_index);
  EXECUTE format('SET LOCAL enable_seqscan = %s', NOT use_index);
  EXECUTE format('SELECT string_agg(id::text, '','') FROM (SELECT id FROM jb WHERE %s '
                 'ORDER BY v <-> ''{0.3,0.6,0.2,0.7,0.5,0.4,0.6,0.3}'' LIMIT 10) s', pred) INTO r;
  RETURN coalesce(r, '(none)');
END $$;
-- a list of ids in ascending order
CREATE FUNCTION sorted(ids text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT string_agg(x, ',' ORDER BY x::int) FROM unnest(string_to_array(ids, ',')) x $$;
SET gateann.search_list_size = 100;
SELECT pred, jb_ids(pred, true) = jb_ids(pred, false) AS same, jb_ids(pred, true) AS ids
  FROM (VALUES ('meta @> ''{"cat": 3}'''),
               ('meta @> ''{"cat": 3.0}'''),                   -- numbers compare as numeric
               ('meta @> ''{"nested": {"a": {"b": 2}}}'''),
               ('meta @> ''{"tags": ["x1"]}'''),               -- an element of an array
               ('meta @> ''{"tags": [3, "x1"]}'''),
               ('meta @> ''{"cat": 3, "lang": "de"}'''),
               ('meta @> ''{}'''),
               ('meta @> ''{"nested": {"a": 2}}'''),           -- no such structure
               ('meta @> ''["x1"]'''),                         -- a top-level array
               ('meta ? ''rare'''),                            -- keys and top-level strings
               ('meta ?| ''{rare,missing}'''),
               ('meta ?| ARRAY[NULL, ''rare'']'),
               ('meta ?| ''{}'''),
               ('meta ?& ''{rare,cat}'''),
               ('meta ?& ''{}'''),
               ('meta ? ''rare'' AND id BETWEEN -5 AND -1'),   -- the array and the raw scalar
               ('meta ? ''b'''),                               -- not at the top level
               ('meta ? ''rare'' AND meta @> ''{"lang": "fr"}'''),
               ('meta -> ''lang'' = ''"de"'''),                -- jsonb equality (jb_lang)
               ('meta -> ''tags'' = ''[3, "x3"]'''),
               ('meta -> ''tags'' = ''["x3", 3]''')) p(pred)   -- (order matters in arrays)
  ORDER BY 1;

-- the store rules nodes out: few of the records a filtered scan reads fail
-- the filter (1 row in 30 passes it: without the store, most would)
SELECT count(*) FROM (SELECT id FROM jb WHERE meta @> '{"cat": 3, "lang": "de"}'
                      ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10) s;
SELECT filter_false_positives * 5 < exact_distances AS store_prunes FROM gateann_last_scan();

-- jsonpath: @@ and @? are index conditions; the store needs the leaves of
-- the equalities a path requires (both sides of &&, filters' predicates),
-- and the operators verify the rest
EXPLAIN (COSTS OFF) SELECT id FROM jb WHERE meta @@ '$.cat == 3' AND meta @? '$.rare'
  ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;
SELECT pred, jb_ids(pred, true) = jb_ids(pred, false) AS same, jb_ids(pred, true) AS ids
  FROM (VALUES ('meta @@ ''$.cat == 3'''),
               ('meta @@ ''$.cat == 3.0'''),
               ('meta @@ ''$.cat == 3 && $.lang == "de"'''),
               ('meta @@ ''$.nested.a.b == 2'''),
               ('meta @@ ''$.tags == "x1"'''),                 -- lax: the array unwrapped
               ('meta @@ ''$.tags[*] == "x1"'''),
               ('meta @@ ''strict $.tags == "x1"'''),          -- strict: no unwrapping
               ('meta @@ ''$.cat == 3 || $.cat == 4'''),       -- || : verified only
               ('meta @@ ''$.cat > 7 && $.lang == "fr"'''),
               ('meta @@ ''$.rare == true'''),
               ('meta @@ ''$ == "rare"'''),                    -- the raw scalar
               ('meta @@ ''$.missing == 1'''),
               ('meta @? ''$.rare'''),
               ('meta @? ''$ ? (@.cat == 3 && @.lang == "de")'''),
               ('meta @? ''$.nested.a ? (@.b == 2)'''),
               ('meta @? ''$.tags[*] ? (@ == "x1")'''),
               ('meta @? ''$.* ? (@ == 3)'''),                 -- a wildcard: verified only
               ('meta @? ''$[*] ? (@ == "x1")''')) p(pred)     -- the top-level array
  ORDER BY 1;
SELECT count(*) FROM (SELECT id FROM jb WHERE meta @@ '$.cat == 3 && $.lang == "de"'
                      ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10) s;
SELECT filter_false_positives * 5 < exact_distances AS store_prunes FROM gateann_last_scan();
SELECT count(*) FROM (SELECT id FROM jb WHERE meta @? '$ ? (@.cat == 3 && @.lang == "de")'
                      ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10) s;
SELECT filter_false_positives * 5 < exact_distances AS store_prunes FROM gateann_last_scan();

-- jsonb_path_match(meta, path, vars), as langchain's PGVector writes a
-- metadata condition: with constant arguments the planner adds the index
-- condition meta @@ path, the values written into it; the call stays a
-- filter (the operator matches whatever the call does)
EXPLAIN (COSTS OFF) SELECT id FROM jb
  WHERE jsonb_path_match(meta, '$.lang == $value', '{"value": "de"}')
    AND jsonb_path_match(meta, '$.cat == $value', '{"value": 3}')
  ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;
SELECT pred, jb_ids(pred, true) = jb_ids(pred, false) AS same, jb_ids(pred, true) AS ids
  FROM (VALUES ('jsonb_path_match(meta, ''$.cat == $v'', ''{"v": 3}'')'),
               ('jsonb_path_match(meta, ''$.cat < $v && $.lang == $w'', ''{"v": 2, "w": "fr"}'')'),
               ('jsonb_path_match(meta, ''$.cat == $v || $.rare == $r'', ''{"v": 3, "r": true}'')'),
               ('jsonb_path_match(meta, ''!($.cat != $v)'', ''{"v": 3}'')'),
               ('jsonb_path_match(meta, ''$.tags == $v'', ''{"v": "x1"}'')'),        -- lax: unwrapped
               ('jsonb_path_match(meta, ''strict $.tags == $v'', ''{"v": "x1"}'')'),
               ('jsonb_path_match(meta, ''$ == $v'', ''{"v": "rare"}'')'),           -- the raw scalar
               ('jsonb_path_match(meta, ''exists($.tags[*] ? (@ == $v))'', ''{"v": "x1"}'')'),
               ('jsonb_path_match(meta, ''$.nested.a.b == $v'', ''{"v": 2}'', silent => true)'),
               ('jsonb_path_match(meta, ''$.lang == $v'', ''{"v": "a\"b"}'')')) p(pred)
  ORDER BY 1;
-- not an index condition: a variable holding an array, a method, a
-- variable vars lacks (the call's own error)
EXPLAIN (COSTS OFF) SELECT id FROM jb WHERE jsonb_path_match(meta, '$.tags == $v', '{"v": ["x1"]}')
  ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id FROM jb WHERE jsonb_path_match(meta, '$.lang.size() == $v', '{"v": 1}')
  ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;
SELECT id FROM jb WHERE jsonb_path_match(meta, '$.cat == $nope', '{"v": 1}')
  ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;
-- jsonb_path_match_tz: the same call, with time zones allowed where a
-- datetime method converts a value; no path with a method is written into
-- the index condition, so it is pushed as jsonb_path_match is, and a
-- .datetime() stays a filter (jb_lang dropped meanwhile, as below)
BEGIN;
DROP INDEX jb_lang;
EXPLAIN (COSTS OFF) SELECT id FROM jb
  WHERE jsonb_path_match_tz(meta, '$.cat < $v && $.lang == $w', '{"v": 2, "w": "fr"}')
  ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;
SELECT jb_ids(pred, true) = jb_ids(pred, false) AS same, jb_ids(pred, true) AS ids
  FROM (VALUES ('jsonb_path_match_tz(meta, ''$.cat < $v && $.lang == $w'', ''{"v": 2, "w": "fr"}'')')) p(pred);
EXPLAIN (COSTS OFF) SELECT id FROM jb
  WHERE jsonb_path_match_tz(meta, '$.lang.datetime() < "2020-01-01".datetime()')
  ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;
ROLLBACK;
-- parameters of a generic plan (a client's prepared statement): the
-- condition is written when the scan starts, by gateann_path_match_condition,
-- which gives the path `true` (every value) for what it cannot write in.
-- (jb_lang dropped meanwhile: between two indexes that order the scan the
-- planner chooses by cost, and a parameter's selectivity is a guess.)
BEGIN;
DROP INDEX jb_lang;
SET LOCAL plan_cache_mode = force_generic_plan;
PREPARE jpm_vars(jsonb) AS SELECT id FROM jb WHERE jsonb_path_match(meta, '$.cat == $v', $1)
  ORDER BY v <-> '{0.3,0.6,0.2,0.7,0.5,0.4,0.6,0.3}' LIMIT 10;
EXPLAIN (COSTS OFF) EXECUTE jpm_vars('{"v": 3}');
PREPARE jpm(jsonpath, jsonb) AS SELECT id FROM jb WHERE jsonb_path_match(meta, $1, $2)
  ORDER BY v <-> '{0.3,0.6,0.2,0.7,0.5,0.4,0.6,0.3}' LIMIT 10;
EXPLAIN (COSTS OFF) EXECUTE jpm('$.cat == $v', '{"v": 3}');
CREATE TEMP TABLE jpm_and AS EXECUTE jpm('$.cat == $v && $.lang == $w', '{"v": 3, "w": "de"}');
CREATE TEMP TABLE jpm_method AS EXECUTE jpm('$.lang.size() == $v', '{"v": 1}');
CREATE TEMP TABLE jpm_array AS EXECUTE jpm('$.tags == $v', '{"v": ["x1"]}');
CREATE TEMP TABLE jpm_vars_3 AS EXECUTE jpm_vars('{"v": 3}');
SELECT c.name, (SELECT string_agg(id::text, ',' ORDER BY id) FROM jpm_and) = sorted(c.seq) AS same
  FROM (VALUES ('and', jb_ids('jsonb_path_match(meta, ''$.cat == $v && $.lang == $w'', ''{"v": 3, "w": "de"}'')', false))) c(name, seq)
UNION ALL
SELECT 'method', (SELECT string_agg(id::text, ',' ORDER BY id) FROM jpm_method) =
  sorted(jb_ids('jsonb_path_match(meta, ''$.lang.size() == $v'', ''{"v": 1}'')', false))
UNION ALL
SELECT 'array', (SELECT string_agg(id::text, ',' ORDER BY id) FROM jpm_array) =
  sorted(jb_ids('jsonb_path_match(meta, ''$.tags == $v'', ''{"v": ["x1"]}'')', false))
UNION ALL
SELECT 'vars', (SELECT string_agg(id::text, ',' ORDER BY id) FROM jpm_vars_3) =
  sorted(jb_ids('jsonb_path_match(meta, ''$.cat == $v'', ''{"v": 3}'')', false));
SELECT gateann_path_match_condition('$.cat == $v && $.lang == $w', '{"v": 3, "w": "de"}') AS written,
       gateann_path_match_condition('$.lang.size() == $v', '{"v": 1}') AS method,
       gateann_path_match_condition('$.cat == $v', NULL) AS no_vars;
ROLLBACK;
DEALLOCATE jpm;
DEALLOCATE jpm_vars;

-- one key's equality as applications write it, on the jsonb column itself:
-- "meta -> 'k' = value" (Django's meta__k) becomes meta @> {k: value} and
-- "meta ->> 'k' = value" (SQLAlchemy's .astext) meta @@ a path that also
-- matches the number or boolean the text spells; the equality stays the
-- filter.  A key given as a parameter of a generic plan reaches the index
-- too, which no expression column (meta ->> 'k') can match.  (jb_lang
-- dropped meanwhile, as above.)
BEGIN;
DROP INDEX jb_lang;
EXPLAIN (COSTS OFF) SELECT id FROM jb WHERE meta ->> 'lang' = 'de'
  ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id FROM jb WHERE '3' = meta ->> 'cat'
  ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id FROM jb WHERE meta -> 'tags' = '[3, "x3"]'
  ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;
SELECT pred, jb_ids(pred, true) = jb_ids(pred, false) AS same, jb_ids(pred, true) AS ids
  FROM (VALUES ('meta ->> ''lang'' = ''de'''),
               ('meta ->> ''cat'' = ''3'''),                   -- a number's text
               ('meta ->> ''cat'' = ''3.0'''),                 -- not 3's text: no row
               ('meta ->> ''rare'' = ''true'''),               -- a boolean's
               ('meta ->> ''tags'' = ''[3, "x3"]'''),          -- an array's
               ('meta ->> ''long'' = repeat(''z'', 400)'),     -- beyond the index's copy
               ('meta ->> ''lang'' = ''de'' AND meta ->> ''cat'' = ''4'''),
               ('meta -> ''lang'' = ''"de"'''),
               ('meta -> ''cat'' = ''3.0'''),                  -- numbers compare as numeric
               ('meta -> ''tags'' = ''[3, "x3"]'''),
               ('meta -> ''tags'' = ''["x3", 3]'''),           -- contained, but not equal
               ('meta -> ''nested'' = ''{"a": {"b": 2}}'''),
               ('meta ->> ''lang'' IN (''de'', ''fr'')'),      -- a list: the alternatives of each
               ('meta ->> ''cat'' = ANY(''{3,4}'')'),
               ('meta ->> ''cat'' = ANY(ARRAY[NULL, ''3''])'),
               ('meta ->> ''cat'' = ANY(''{}'')'),
               ('meta -> ''lang'' IN (''"de"'', ''"xx"'')'),
               ('meta -> ''tags'' IN (''[3, "x3"]'', ''"x"'')')) p(pred)
  ORDER BY 1;
EXPLAIN (COSTS OFF) SELECT id FROM jb WHERE meta ->> 'lang' IN ('de', 'fr')
  ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10;
-- the store rules nodes out by either side of an ||: a number's text finds
-- the number's leaf, and few records read fail the filter
SELECT count(*) FROM (SELECT id FROM jb WHERE meta ->> 'cat' = '3'
                      ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10) s;
SELECT filter_false_positives * 5 < exact_distances AS store_prunes FROM gateann_last_scan();
SELECT count(*) FROM (SELECT id FROM jb WHERE meta @@ '$.cat == 3 || $.lang == "xx"'
                      ORDER BY v <-> '{0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}' LIMIT 10) s;
SELECT filter_false_positives * 5 < exact_distances AS store_prunes FROM gateann_last_scan();
SET LOCAL plan_cache_mode = force_generic_plan;
PREPARE key_text(text, text) AS SELECT id FROM jb WHERE meta ->> $1 = $2
  ORDER BY v <-> '{0.3,0.6,0.2,0.7,0.5,0.4,0.6,0.3}' LIMIT 10;
EXPLAIN (COSTS OFF) EXECUTE key_text('lang', 'de');
PREPARE key_value(text, jsonb) AS SELECT id FROM jb WHERE meta -> $1 = $2
  ORDER BY v <-> '{0.3,0.6,0.2,0.7,0.5,0.4,0.6,0.3}' LIMIT 10;
EXPLAIN (COSTS OFF) EXECUTE key_value('lang', '"de"');
PREPARE key_any(text, text[]) AS SELECT id FROM jb WHERE meta ->> $1 = ANY($2)
  ORDER BY v <-> '{0.3,0.6,0.2,0.7,0.5,0.4,0.6,0.3}' LIMIT 10;
EXPLAIN (COSTS OFF) EXECUTE key_any('lang', '{de,fr}');
CREATE TEMP TABLE ka_cat AS EXECUTE key_any('cat', '{3,4}');
CREATE TEMP TABLE kt_lang AS EXECUTE key_text('lang', 'de');
CREATE TEMP TABLE kt_cat AS EXECUTE key_text('cat', '3');
CREATE TEMP TABLE kt_null AS EXECUTE key_text(NULL, 'de');
CREATE TEMP TABLE kv_tags AS EXECUTE key_value('tags', '[3, "x3"]');
SELECT c.name, coalesce((SELECT string_agg(id::text, ',' ORDER BY id) FROM kt_lang), '(none)') = sorted(c.seq) AS same
  FROM (VALUES ('text lang', jb_ids('meta ->> ''lang'' = ''de''', false))) c(name, seq)
UNION ALL
SELECT 'text cat', (SELECT string_agg(id::text, ',' ORDER BY id) FROM kt_cat) =
  sorted(jb_ids('meta ->> ''cat'' = ''3''', false))
UNION ALL
SELECT 'null key', NOT EXISTS (SELECT FROM kt_null)
UNION ALL
SELECT 'value tags', (SELECT string_agg(id::text, ',' ORDER BY id) FROM kv_tags) =
  sorted(jb_ids('meta -> ''tags'' = ''[3, "x3"]''', false))
UNION ALL
SELECT 'any cat', (SELECT string_agg(id::text, ',' ORDER BY id) FROM ka_cat) =
  sorted(jb_ids('meta ->> ''cat'' IN (''3'', ''4'')', false));
SELECT gateann_key_text_condition('a"b', '-0.5') AS number,
       gateann_key_text_condition('k', 'false') AS boolean,
       gateann_key_text_condition('k', '{"a": 1}') AS object,
       gateann_key_value_condition('k', '[1, "x"]') AS contained,
       gateann_key_text_condition(NULL, 'x') AS no_key;
SELECT gateann_key_any_condition('k', '{a,3,NULL}'::text[]) AS texts,
       gateann_key_any_condition('k', '{"\"a\"",1,null}'::jsonb[]) AS values,
       gateann_key_any_condition('k', '{"[1]","\"a\""}'::jsonb[]) AS an_array,
       gateann_key_any_condition('k', '{}'::text[]) AS empty;
SELECT gateann_key_any_condition('k', '{1}'::int[]);
ROLLBACK;
DEALLOCATE key_text;
DEALLOCATE key_value;
DEALLOCATE key_any;

-- rows inserted after the build, and after VACUUM
INSERT INTO jb VALUES (9001, '{0.3,0.6,0.2,0.7,0.5,0.4,0.6,0.3}', '{"cat": 11, "new": ["k"]}');
SELECT id FROM jb WHERE meta @> '{"new": ["k"]}' ORDER BY v <-> '{0.3,0.6,0.2,0.7,0.5,0.4,0.6,0.3}' LIMIT 3;
SELECT id FROM jb WHERE meta ? 'new' ORDER BY v <-> '{0.3,0.6,0.2,0.7,0.5,0.4,0.6,0.3}' LIMIT 3;
DELETE FROM jb WHERE id % 3 = 0;
VACUUM jb;
SELECT jb_ids('meta @> ''{"cat": 4}''', true) = jb_ids('meta @> ''{"cat": 4}''', false) AS same_after_vacuum;
RESET enable_seqscan;
RESET gateann.search_list_size;
DROP FUNCTION jb_ids(text, bool);
DROP FUNCTION sorted(text);
DROP TABLE jb;
DROP FUNCTION jb_rnd(int, int);
