-- gateann extension, version 0.1.0
\echo Use "CREATE EXTENSION gateann" to load this file. \quit

-- access method ---------------------------------------------------------

CREATE FUNCTION gateann_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME' LANGUAGE C;

CREATE ACCESS METHOD gateann TYPE INDEX HANDLER gateann_handler;
COMMENT ON ACCESS METHOD gateann IS 'GateANN graph index for filtered approximate nearest-neighbour search';

-- distances on real[] ----------------------------------------------------

-- What a call of a distance function costs the planner: by the query
-- vector's dimensions when it is a constant (vector.c).
CREATE FUNCTION gateann_distance_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION gateann_l2_distance(real[], real[]) RETURNS float8
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE FUNCTION gateann_negative_inner_product(real[], real[]) RETURNS float8
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE FUNCTION gateann_cosine_distance(real[], real[]) RETURNS float8
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;

CREATE OPERATOR <-> (LEFTARG = real[], RIGHTARG = real[],
	FUNCTION = gateann_l2_distance, COMMUTATOR = '<->');
CREATE OPERATOR <#> (LEFTARG = real[], RIGHTARG = real[],
	FUNCTION = gateann_negative_inner_product, COMMUTATOR = '<#>');
CREATE OPERATOR <=> (LEFTARG = real[], RIGHTARG = real[],
	FUNCTION = gateann_cosine_distance, COMMUTATOR = '<=>');

-- vector column operator classes: the ordering operator's strategy number
-- names the metric (1 = L2, 2 = inner product, 3 = cosine)

CREATE OPERATOR CLASS float4_l2_ops DEFAULT FOR TYPE real[] USING gateann AS
	OPERATOR 1 <-> (real[], real[]) FOR ORDER BY float_ops;
CREATE OPERATOR CLASS float4_ip_ops FOR TYPE real[] USING gateann AS
	OPERATOR 2 <#> (real[], real[]) FOR ORDER BY float_ops;
CREATE OPERATOR CLASS float4_cosine_ops FOR TYPE real[] USING gateann AS
	OPERATOR 3 <=> (real[], real[]) FOR ORDER BY float_ops;

-- the query vector as clients bind it: a list of floats arrives as double
-- precision[], of whole numbers as smallint[], integer[] or bigint[], and
-- literals as numeric[] or integer[].  One operator for each (with only
-- some of them, an argument of another type that casts to several would be
-- ambiguous); the scan converts the query as a cast to real[] does.
CREATE FUNCTION gateann_l2_distance(real[], double precision[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_l2_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE FUNCTION gateann_negative_inner_product(real[], double precision[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_negative_inner_product' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE FUNCTION gateann_cosine_distance(real[], double precision[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_cosine_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE OPERATOR <-> (LEFTARG = real[], RIGHTARG = double precision[], FUNCTION = gateann_l2_distance);
CREATE OPERATOR <#> (LEFTARG = real[], RIGHTARG = double precision[], FUNCTION = gateann_negative_inner_product);
CREATE OPERATOR <=> (LEFTARG = real[], RIGHTARG = double precision[], FUNCTION = gateann_cosine_distance);
CREATE FUNCTION gateann_l2_distance(real[], numeric[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_l2_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE FUNCTION gateann_negative_inner_product(real[], numeric[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_negative_inner_product' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE FUNCTION gateann_cosine_distance(real[], numeric[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_cosine_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE OPERATOR <-> (LEFTARG = real[], RIGHTARG = numeric[], FUNCTION = gateann_l2_distance);
CREATE OPERATOR <#> (LEFTARG = real[], RIGHTARG = numeric[], FUNCTION = gateann_negative_inner_product);
CREATE OPERATOR <=> (LEFTARG = real[], RIGHTARG = numeric[], FUNCTION = gateann_cosine_distance);
CREATE FUNCTION gateann_l2_distance(real[], smallint[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_l2_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE FUNCTION gateann_negative_inner_product(real[], smallint[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_negative_inner_product' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE FUNCTION gateann_cosine_distance(real[], smallint[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_cosine_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE OPERATOR <-> (LEFTARG = real[], RIGHTARG = smallint[], FUNCTION = gateann_l2_distance);
CREATE OPERATOR <#> (LEFTARG = real[], RIGHTARG = smallint[], FUNCTION = gateann_negative_inner_product);
CREATE OPERATOR <=> (LEFTARG = real[], RIGHTARG = smallint[], FUNCTION = gateann_cosine_distance);
CREATE FUNCTION gateann_l2_distance(real[], integer[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_l2_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE FUNCTION gateann_negative_inner_product(real[], integer[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_negative_inner_product' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE FUNCTION gateann_cosine_distance(real[], integer[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_cosine_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE OPERATOR <-> (LEFTARG = real[], RIGHTARG = integer[], FUNCTION = gateann_l2_distance);
CREATE OPERATOR <#> (LEFTARG = real[], RIGHTARG = integer[], FUNCTION = gateann_negative_inner_product);
CREATE OPERATOR <=> (LEFTARG = real[], RIGHTARG = integer[], FUNCTION = gateann_cosine_distance);
CREATE FUNCTION gateann_l2_distance(real[], bigint[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_l2_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE FUNCTION gateann_negative_inner_product(real[], bigint[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_negative_inner_product' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE FUNCTION gateann_cosine_distance(real[], bigint[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gateann_cosine_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT gateann_distance_support;
CREATE OPERATOR <-> (LEFTARG = real[], RIGHTARG = bigint[], FUNCTION = gateann_l2_distance);
CREATE OPERATOR <#> (LEFTARG = real[], RIGHTARG = bigint[], FUNCTION = gateann_negative_inner_product);
CREATE OPERATOR <=> (LEFTARG = real[], RIGHTARG = bigint[], FUNCTION = gateann_cosine_distance);
ALTER OPERATOR FAMILY float4_l2_ops USING gateann ADD
	OPERATOR 1 <-> (real[], double precision[]) FOR ORDER BY float_ops,
	OPERATOR 1 <-> (real[], numeric[]) FOR ORDER BY float_ops,
	OPERATOR 1 <-> (real[], smallint[]) FOR ORDER BY float_ops,
	OPERATOR 1 <-> (real[], integer[]) FOR ORDER BY float_ops,
	OPERATOR 1 <-> (real[], bigint[]) FOR ORDER BY float_ops;
ALTER OPERATOR FAMILY float4_ip_ops USING gateann ADD
	OPERATOR 2 <#> (real[], double precision[]) FOR ORDER BY float_ops,
	OPERATOR 2 <#> (real[], numeric[]) FOR ORDER BY float_ops,
	OPERATOR 2 <#> (real[], smallint[]) FOR ORDER BY float_ops,
	OPERATOR 2 <#> (real[], integer[]) FOR ORDER BY float_ops,
	OPERATOR 2 <#> (real[], bigint[]) FOR ORDER BY float_ops;
ALTER OPERATOR FAMILY float4_cosine_ops USING gateann ADD
	OPERATOR 3 <=> (real[], double precision[]) FOR ORDER BY float_ops,
	OPERATOR 3 <=> (real[], numeric[]) FOR ORDER BY float_ops,
	OPERATOR 3 <=> (real[], smallint[]) FOR ORDER BY float_ops,
	OPERATOR 3 <=> (real[], integer[]) FOR ORDER BY float_ops,
	OPERATOR 3 <=> (real[], bigint[]) FOR ORDER BY float_ops;

-- double precision[] vector columns (what ORMs map a list of floats to, e.g.
-- Django's ArrayField(FloatField())): classes float8_l2_ops (default),
-- float8_ip_ops and float8_cosine_ops, with the same query types as real[]
-- (real[] among them).  The index keeps single precision: each value is
-- converted as a cast to real[] converts it (out of its range: an error),
-- and the operators compute on the converted values, so that the index
-- and a sequential scan give the same distances.
DO $$
DECLARE
	m record;
	q text;
BEGIN
	FOR m IN SELECT * FROM (VALUES (1, 'l2', '<->', 'gateann_l2_distance', 'DEFAULT'),
								   (2, 'ip', '<#>', 'gateann_negative_inner_product', ''),
								   (3, 'cosine', '<=>', 'gateann_cosine_distance', ''))
				 AS v(strategy, name, opr, func, dflt)
	LOOP
		FOREACH q IN ARRAY ARRAY['double precision[]', 'real[]', 'numeric[]',
								 'smallint[]', 'integer[]', 'bigint[]']
		LOOP
			EXECUTE format($f$CREATE FUNCTION %1$s(double precision[], %2$s) RETURNS float8
				AS 'MODULE_PATHNAME', %1$L LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
				SUPPORT gateann_distance_support$f$,
				m.func, q);
			EXECUTE format('CREATE OPERATOR %s (LEFTARG = double precision[], RIGHTARG = %s, FUNCTION = %s%s)',
						   m.opr, q, m.func,
						   CASE WHEN q = 'double precision[]' THEN format(', COMMUTATOR = %s', m.opr) ELSE '' END);
		END LOOP;
		EXECUTE format($f$CREATE OPERATOR CLASS float8_%1$s_ops %2$s FOR TYPE double precision[] USING gateann AS
			OPERATOR %3$s %4$s (double precision[], double precision[]) FOR ORDER BY float_ops$f$,
			m.name, m.dflt, m.strategy, m.opr);
		FOREACH q IN ARRAY ARRAY['real[]', 'numeric[]', 'smallint[]', 'integer[]', 'bigint[]']
		LOOP
			EXECUTE format('ALTER OPERATOR FAMILY float8_%s_ops USING gateann ADD OPERATOR %s %s (double precision[], %s) FOR ORDER BY float_ops',
						   m.name, m.strategy, m.opr, q);
		END LOOP;
	END LOOP;
END
$$;

-- filter column operator classes: the values are stored in the index for
-- filtering; WHERE clauses with these operators become index conditions.
-- Strategy numbers (the C code relies on them): 1 <, 2 <=, 3 =, 4 >=, 5 >
-- (scalar types), 6 && (overlap), 7 @> (contains), 8 <@ (contained by)
-- (arrays; 7 also jsonb), 9 ?, 10 ?|, 11 ?& (jsonb keys); all of purpose
-- search, so strategies 1-3 here are not the ORDER BY (metric) strategies
-- of the vector classes above: tell them apart by pg_amop.amoppurpose.  No support functions: comparison functions come from
-- the type cache.  "col = ANY(array)" uses the = operator (amsearcharray;
-- PostgreSQL 15's planner leaves it out of an ORDER BY scan on a later column).

-- integers, with the cross-type comparisons of btree integer_ops
CREATE OPERATOR FAMILY gateann_integer_ops USING gateann;
CREATE OPERATOR CLASS int2_filter_ops DEFAULT FOR TYPE int2 USING gateann
	FAMILY gateann_integer_ops AS
	OPERATOR 1 < (int2, int2),
	OPERATOR 2 <= (int2, int2),
	OPERATOR 3 = (int2, int2),
	OPERATOR 4 >= (int2, int2),
	OPERATOR 5 > (int2, int2);
CREATE OPERATOR CLASS int4_filter_ops DEFAULT FOR TYPE int4 USING gateann
	FAMILY gateann_integer_ops AS
	OPERATOR 1 < (int4, int4),
	OPERATOR 2 <= (int4, int4),
	OPERATOR 3 = (int4, int4),
	OPERATOR 4 >= (int4, int4),
	OPERATOR 5 > (int4, int4);
CREATE OPERATOR CLASS int8_filter_ops DEFAULT FOR TYPE int8 USING gateann
	FAMILY gateann_integer_ops AS
	OPERATOR 1 < (int8, int8),
	OPERATOR 2 <= (int8, int8),
	OPERATOR 3 = (int8, int8),
	OPERATOR 4 >= (int8, int8),
	OPERATOR 5 > (int8, int8);
ALTER OPERATOR FAMILY gateann_integer_ops USING gateann ADD
	OPERATOR 1 < (int2, int4),
	OPERATOR 2 <= (int2, int4),
	OPERATOR 3 = (int2, int4),
	OPERATOR 4 >= (int2, int4),
	OPERATOR 5 > (int2, int4),
	OPERATOR 1 < (int2, int8),
	OPERATOR 2 <= (int2, int8),
	OPERATOR 3 = (int2, int8),
	OPERATOR 4 >= (int2, int8),
	OPERATOR 5 > (int2, int8),
	OPERATOR 1 < (int4, int2),
	OPERATOR 2 <= (int4, int2),
	OPERATOR 3 = (int4, int2),
	OPERATOR 4 >= (int4, int2),
	OPERATOR 5 > (int4, int2),
	OPERATOR 1 < (int4, int8),
	OPERATOR 2 <= (int4, int8),
	OPERATOR 3 = (int4, int8),
	OPERATOR 4 >= (int4, int8),
	OPERATOR 5 > (int4, int8),
	OPERATOR 1 < (int8, int2),
	OPERATOR 2 <= (int8, int2),
	OPERATOR 3 = (int8, int2),
	OPERATOR 4 >= (int8, int2),
	OPERATOR 5 > (int8, int2),
	OPERATOR 1 < (int8, int4),
	OPERATOR 2 <= (int8, int4),
	OPERATOR 3 = (int8, int4),
	OPERATOR 4 >= (int8, int4),
	OPERATOR 5 > (int8, int4);

-- floats, with the cross-type comparisons of btree float_ops
CREATE OPERATOR FAMILY gateann_float_ops USING gateann;
CREATE OPERATOR CLASS float4_filter_ops DEFAULT FOR TYPE float4 USING gateann
	FAMILY gateann_float_ops AS
	OPERATOR 1 < (float4, float4),
	OPERATOR 2 <= (float4, float4),
	OPERATOR 3 = (float4, float4),
	OPERATOR 4 >= (float4, float4),
	OPERATOR 5 > (float4, float4);
CREATE OPERATOR CLASS float8_filter_ops DEFAULT FOR TYPE float8 USING gateann
	FAMILY gateann_float_ops AS
	OPERATOR 1 < (float8, float8),
	OPERATOR 2 <= (float8, float8),
	OPERATOR 3 = (float8, float8),
	OPERATOR 4 >= (float8, float8),
	OPERATOR 5 > (float8, float8);
ALTER OPERATOR FAMILY gateann_float_ops USING gateann ADD
	OPERATOR 1 < (float4, float8),
	OPERATOR 2 <= (float4, float8),
	OPERATOR 3 = (float4, float8),
	OPERATOR 4 >= (float4, float8),
	OPERATOR 5 > (float4, float8),
	OPERATOR 1 < (float8, float4),
	OPERATOR 2 <= (float8, float4),
	OPERATOR 3 = (float8, float4),
	OPERATOR 4 >= (float8, float4),
	OPERATOR 5 > (float8, float4);

-- numeric
CREATE OPERATOR FAMILY gateann_numeric_ops USING gateann;
CREATE OPERATOR CLASS numeric_filter_ops DEFAULT FOR TYPE numeric USING gateann
	FAMILY gateann_numeric_ops AS
	OPERATOR 1 < (numeric, numeric),
	OPERATOR 2 <= (numeric, numeric),
	OPERATOR 3 = (numeric, numeric),
	OPERATOR 4 >= (numeric, numeric),
	OPERATOR 5 > (numeric, numeric);

-- date/time, with the cross-type comparisons of btree datetime_ops
CREATE OPERATOR FAMILY gateann_datetime_ops USING gateann;
CREATE OPERATOR CLASS date_filter_ops DEFAULT FOR TYPE date USING gateann
	FAMILY gateann_datetime_ops AS
	OPERATOR 1 < (date, date),
	OPERATOR 2 <= (date, date),
	OPERATOR 3 = (date, date),
	OPERATOR 4 >= (date, date),
	OPERATOR 5 > (date, date);
CREATE OPERATOR CLASS timestamp_filter_ops DEFAULT FOR TYPE timestamp USING gateann
	FAMILY gateann_datetime_ops AS
	OPERATOR 1 < (timestamp, timestamp),
	OPERATOR 2 <= (timestamp, timestamp),
	OPERATOR 3 = (timestamp, timestamp),
	OPERATOR 4 >= (timestamp, timestamp),
	OPERATOR 5 > (timestamp, timestamp);
CREATE OPERATOR CLASS timestamptz_filter_ops DEFAULT FOR TYPE timestamptz USING gateann
	FAMILY gateann_datetime_ops AS
	OPERATOR 1 < (timestamptz, timestamptz),
	OPERATOR 2 <= (timestamptz, timestamptz),
	OPERATOR 3 = (timestamptz, timestamptz),
	OPERATOR 4 >= (timestamptz, timestamptz),
	OPERATOR 5 > (timestamptz, timestamptz);
ALTER OPERATOR FAMILY gateann_datetime_ops USING gateann ADD
	OPERATOR 1 < (date, timestamp),
	OPERATOR 2 <= (date, timestamp),
	OPERATOR 3 = (date, timestamp),
	OPERATOR 4 >= (date, timestamp),
	OPERATOR 5 > (date, timestamp),
	OPERATOR 1 < (date, timestamptz),
	OPERATOR 2 <= (date, timestamptz),
	OPERATOR 3 = (date, timestamptz),
	OPERATOR 4 >= (date, timestamptz),
	OPERATOR 5 > (date, timestamptz),
	OPERATOR 1 < (timestamp, date),
	OPERATOR 2 <= (timestamp, date),
	OPERATOR 3 = (timestamp, date),
	OPERATOR 4 >= (timestamp, date),
	OPERATOR 5 > (timestamp, date),
	OPERATOR 1 < (timestamp, timestamptz),
	OPERATOR 2 <= (timestamp, timestamptz),
	OPERATOR 3 = (timestamp, timestamptz),
	OPERATOR 4 >= (timestamp, timestamptz),
	OPERATOR 5 > (timestamp, timestamptz),
	OPERATOR 1 < (timestamptz, date),
	OPERATOR 2 <= (timestamptz, date),
	OPERATOR 3 = (timestamptz, date),
	OPERATOR 4 >= (timestamptz, date),
	OPERATOR 5 > (timestamptz, date),
	OPERATOR 1 < (timestamptz, timestamp),
	OPERATOR 2 <= (timestamptz, timestamp),
	OPERATOR 3 = (timestamptz, timestamp),
	OPERATOR 4 >= (timestamptz, timestamp),
	OPERATOR 5 > (timestamptz, timestamp);

-- bool
CREATE OPERATOR FAMILY gateann_bool_ops USING gateann;
CREATE OPERATOR CLASS bool_filter_ops DEFAULT FOR TYPE bool USING gateann
	FAMILY gateann_bool_ops AS
	OPERATOR 1 < (bool, bool),
	OPERATOR 2 <= (bool, bool),
	OPERATOR 3 = (bool, bool),
	OPERATOR 4 >= (bool, bool),
	OPERATOR 5 > (bool, bool);

-- text (varchar columns use it through binary coercion); the operators are
-- collation-aware
CREATE OPERATOR FAMILY gateann_text_ops USING gateann;
CREATE OPERATOR CLASS text_filter_ops DEFAULT FOR TYPE text USING gateann
	FAMILY gateann_text_ops AS
	OPERATOR 1 < (text, text),
	OPERATOR 2 <= (text, text),
	OPERATOR 3 = (text, text),
	OPERATOR 4 >= (text, text),
	OPERATOR 5 > (text, text);

-- uuid
CREATE OPERATOR FAMILY gateann_uuid_ops USING gateann;
CREATE OPERATOR CLASS uuid_filter_ops DEFAULT FOR TYPE uuid USING gateann
	FAMILY gateann_uuid_ops AS
	OPERATOR 1 < (uuid, uuid),
	OPERATOR 2 <= (uuid, uuid),
	OPERATOR 3 = (uuid, uuid),
	OPERATOR 4 >= (uuid, uuid),
	OPERATOR 5 > (uuid, uuid);

-- arrays (multi-label tags): the built-in anyarray operators, as GIN's
-- array_ops declares them.  Their pg_amop entries are (anyarray, anyarray), so
-- each array type needs a family of its own (one family holding two of these
-- classes would register the same operator twice).
CREATE OPERATOR FAMILY gateann_int2_array_ops USING gateann;
CREATE OPERATOR CLASS int2_array_filter_ops DEFAULT FOR TYPE int2[] USING gateann
	FAMILY gateann_int2_array_ops AS
	OPERATOR 6 && (anyarray, anyarray),
	OPERATOR 7 @> (anyarray, anyarray),
	OPERATOR 8 <@ (anyarray, anyarray);
CREATE OPERATOR FAMILY gateann_int4_array_ops USING gateann;
CREATE OPERATOR CLASS int4_array_filter_ops DEFAULT FOR TYPE int4[] USING gateann
	FAMILY gateann_int4_array_ops AS
	OPERATOR 6 && (anyarray, anyarray),
	OPERATOR 7 @> (anyarray, anyarray),
	OPERATOR 8 <@ (anyarray, anyarray);
CREATE OPERATOR FAMILY gateann_int8_array_ops USING gateann;
CREATE OPERATOR CLASS int8_array_filter_ops DEFAULT FOR TYPE int8[] USING gateann
	FAMILY gateann_int8_array_ops AS
	OPERATOR 6 && (anyarray, anyarray),
	OPERATOR 7 @> (anyarray, anyarray),
	OPERATOR 8 <@ (anyarray, anyarray);
CREATE OPERATOR FAMILY gateann_text_array_ops USING gateann;
CREATE OPERATOR CLASS text_array_filter_ops DEFAULT FOR TYPE text[] USING gateann
	FAMILY gateann_text_array_ops AS
	OPERATOR 6 && (anyarray, anyarray),
	OPERATOR 7 @> (anyarray, anyarray),
	OPERATOR 8 <@ (anyarray, anyarray);

-- jsonb: equality, containment and top-level keys (strategies 9 ?, 10 ?|,
-- 11 ?&) and jsonpath (12 @@, 13 @?), as GIN's jsonb_ops declares them;
-- equality for an expression column such as (meta -> 'k'), which
-- `meta -> 'k' = '"v"'` (Django's meta__k = 'v') then reaches.  The filter
-- store keeps Bloom bits of each value's leaves and keys
-- (src/filter_jsonb.c; of a jsonpath, the equalities it needs); the
-- operators themselves verify a read record.
CREATE OPERATOR FAMILY gateann_jsonb_ops USING gateann;
CREATE OPERATOR CLASS jsonb_filter_ops DEFAULT FOR TYPE jsonb USING gateann
	FAMILY gateann_jsonb_ops AS
	OPERATOR 3 = (jsonb, jsonb),
	OPERATOR 7 @> (jsonb, jsonb),
	OPERATOR 9 ? (jsonb, text),
	OPERATOR 10 ?| (jsonb, text[]),
	OPERATOR 11 ?& (jsonb, text[]),
	OPERATOR 12 @@ (jsonb, jsonpath),
	OPERATOR 13 @? (jsonb, jsonpath);

-- The condition on a jsonb filter column that the planner adds for
-- jsonb_path_match(column, path, vars) when path or vars is a parameter (a
-- generic plan): path with vars written in, or the path `true` (every value
-- matches) for what cannot be written so.  The call stays the filter.
CREATE FUNCTION gateann_path_match_condition(path jsonpath, vars jsonb) RETURNS jsonpath
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- What the planner tests a jsonb filter column with for one key's equality,
-- as applications write it: "column -> key = value" (Django's meta__k = v)
-- becomes column @> {key: value}; "column ->> key = value" (SQLAlchemy's
-- .astext, Django's KeyTextTransform) becomes column @@ a path that matches
-- the string value or the number or boolean it spells.  Key and value may be
-- parameters of a generic plan.  The equality stays the filter; a NULL
-- matches nothing.
CREATE FUNCTION gateann_key_value_condition(key text, value jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION gateann_key_text_condition(key text, value text) RETURNS jsonpath
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
-- ... and "column ->> key IN (...)" / "= ANY(values)" (text[]), "column ->
-- key IN (...)" (jsonb[]): a path matching any of the values.
CREATE FUNCTION gateann_key_any_condition(key text, vals anyarray) RETURNS jsonpath
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- introspection ------------------------------------------------------------

CREATE FUNCTION gateann_last_scan(
	OUT visited bigint, OUT reads bigint, OUT buffer_hits bigint,
	OUT tunneled bigint, OUT filter_checks bigint,
	OUT filter_false_positives bigint, OUT exact_distances bigint,
	OUT pq_distances bigint, OUT returned bigint, OUT io_wait_us bigint,
	OUT tunnel_us bigint, OUT compute_us bigint, OUT io_method text,
	OUT io_direct boolean, OUT strategy text, OUT recoveries bigint,
	OUT budget_exhausted boolean, OUT skipped bigint,
	OUT resident_hits bigint, OUT page_cache_hits bigint,
	OUT cache_hits bigint, OUT page_hits bigint,
	OUT page_search_results bigint)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION gateann_index_info(index regclass,
	OUT nodes bigint, OUT live_nodes bigint, OUT deleted_nodes bigint,
	OUT pages bigint, OUT dims integer, OUT metric text,
	OUT max_neighbors integer, OUT pq_subspaces integer,
	OUT tunnel_neighbors integer, OUT pq_bytes bigint,
	OUT neighbor_store_bytes bigint, OUT filter_store_bytes bigint,
	OUT loaded boolean, OUT shared boolean, OUT build_id bigint,
	OUT free_slots bigint, OUT pq_training_rows bigint,
	OUT entry_points integer, OUT unreachable_nodes bigint,
	OUT build_recall real, OUT build_recall_list integer,
	OUT record_precision text, OUT record_error real)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION gateann_record_cache_info(
	OUT size_bytes bigint, OUT records bigint, OUT record_bytes bigint,
	OUT lookups bigint, OUT hits bigint, OUT stale bigint, OUT stores bigint,
	OUT hit_rate double precision)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL SAFE;

CREATE FUNCTION gateann_prewarm(index regclass) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION gateann_verify(index regclass) RETURNS SETOF text
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

-- Partitioning by vector cluster and routing queries to the nearest
-- clusters' partitions (src/routing.c)
CREATE FUNCTION gateann_kmeans_accum(internal, real[], integer) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION gateann_kmeans_final(internal) RETURNS real[]
	AS 'MODULE_PATHNAME' LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
CREATE AGGREGATE gateann_kmeans(vector real[], clusters integer) (
	SFUNC = gateann_kmeans_accum, STYPE = internal, FINALFUNC = gateann_kmeans_final);
CREATE FUNCTION gateann_nearest_centroid(vector real[], centroids real[], rank integer DEFAULT 1)
	RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
-- what a client binds a list of floats as; real[] centres are cast to it
CREATE FUNCTION gateann_nearest_centroid(vector double precision[],
	centroids double precision[], rank integer DEFAULT 1)
	RETURNS integer
	AS 'MODULE_PATHNAME', 'gateann_nearest_centroid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION gateann_graph(index regclass,
	OUT node bigint, OUT heap_tid tid, OUT deleted boolean, OUT entry_point boolean,
	OUT neighbors bigint[])
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
