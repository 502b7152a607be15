-- gateann extension, version 0.1.0
\echo Use "CREATE EXTENSION gateann" to load this file. \quit

-- access method ---------------------------------------------------------

CREATE FUNCTION gateann_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME' LANGUAGE C;

CREATE ACCESS METHOD gateann TYPE INDEX HANDLER gateann_handler;
COMMENT ON ACCESS METHOD gateann IS 'GateANN graph index for filtered approximate nearest-neighbour search';

-- distances on real[] ----------------------------------------------------

CREATE FUNCTION gateann_l2_distance(real[], real[]) RETURNS float8
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION gateann_negative_inner_product(real[], real[]) RETURNS float8
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION gateann_cosine_distance(real[], real[]) RETURNS float8
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

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

-- filter column operator classes: the values are stored in the index for
-- filtering; this version keeps copies only (WHERE clauses on them are
-- applied by the executor above the scan)

CREATE OPERATOR CLASS int2_filter_ops DEFAULT FOR TYPE int2 USING gateann AS STORAGE int2;
CREATE OPERATOR CLASS int4_filter_ops DEFAULT FOR TYPE int4 USING gateann AS STORAGE int4;
CREATE OPERATOR CLASS int8_filter_ops DEFAULT FOR TYPE int8 USING gateann AS STORAGE int8;
CREATE OPERATOR CLASS float4_filter_ops DEFAULT FOR TYPE float4 USING gateann AS STORAGE float4;
CREATE OPERATOR CLASS float8_filter_ops DEFAULT FOR TYPE float8 USING gateann AS STORAGE float8;
CREATE OPERATOR CLASS numeric_filter_ops DEFAULT FOR TYPE numeric USING gateann AS STORAGE numeric;
CREATE OPERATOR CLASS date_filter_ops DEFAULT FOR TYPE date USING gateann AS STORAGE date;
CREATE OPERATOR CLASS timestamp_filter_ops DEFAULT FOR TYPE timestamp USING gateann AS STORAGE timestamp;
CREATE OPERATOR CLASS timestamptz_filter_ops DEFAULT FOR TYPE timestamptz USING gateann AS STORAGE timestamptz;
CREATE OPERATOR CLASS bool_filter_ops DEFAULT FOR TYPE bool USING gateann AS STORAGE bool;
CREATE OPERATOR CLASS text_filter_ops DEFAULT FOR TYPE text USING gateann AS STORAGE text;
CREATE OPERATOR CLASS uuid_filter_ops DEFAULT FOR TYPE uuid USING gateann AS STORAGE uuid;
CREATE OPERATOR CLASS int2_array_filter_ops DEFAULT FOR TYPE int2[] USING gateann AS STORAGE int2[];
CREATE OPERATOR CLASS int4_array_filter_ops DEFAULT FOR TYPE int4[] USING gateann AS STORAGE int4[];
CREATE OPERATOR CLASS int8_array_filter_ops DEFAULT FOR TYPE int8[] USING gateann AS STORAGE int8[];
CREATE OPERATOR CLASS text_array_filter_ops DEFAULT FOR TYPE text[] USING gateann AS STORAGE text[];

-- introspection ------------------------------------------------------------

CREATE FUNCTION gateann_last_scan(
	OUT visited bigint, OUT reads bigint, OUT buffer_hits bigint,
	OUT tunneled bigint, OUT filter_checks bigint,
	OUT filter_false_positives bigint, OUT exact_distances bigint,
	OUT pq_distances bigint, OUT returned bigint, OUT io_wait_us bigint,
	OUT tunnel_us bigint, OUT compute_us bigint, OUT io_method text)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION gateann_index_info(index regclass,
	OUT nodes bigint, OUT live_nodes bigint, OUT deleted_nodes bigint,
	OUT pages bigint, OUT dims integer, OUT metric text,
	OUT max_neighbors integer, OUT pq_subspaces integer,
	OUT tunnel_neighbors integer, OUT pq_bytes bigint,
	OUT neighbor_store_bytes bigint, OUT filter_store_bytes bigint,
	OUT loaded boolean, OUT shared boolean, OUT build_id bigint)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION gateann_prewarm(index regclass) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
