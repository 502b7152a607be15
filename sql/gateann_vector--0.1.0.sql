-- gateann_vector extension, version 0.1.0: gateann operator classes for
-- pgvector's vector and halfvec types, using pgvector's own operators.
\echo Use "CREATE EXTENSION gateann_vector" to load this file. \quit

-- support function 1: pgvector vector -> real[] (read by gateann's library)
CREATE FUNCTION gateann_vector_to_real(vector) RETURNS real[]
	AS 'MODULE_PATHNAME', 'gateann_pgvector_to_real'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR CLASS vector_l2_ops DEFAULT FOR TYPE vector USING gateann AS
	OPERATOR 1 <-> (vector, vector) FOR ORDER BY float_ops,
	FUNCTION 1 gateann_vector_to_real(vector);
CREATE OPERATOR CLASS vector_ip_ops FOR TYPE vector USING gateann AS
	OPERATOR 2 <#> (vector, vector) FOR ORDER BY float_ops,
	FUNCTION 1 gateann_vector_to_real(vector);
CREATE OPERATOR CLASS vector_cosine_ops FOR TYPE vector USING gateann AS
	OPERATOR 3 <=> (vector, vector) FOR ORDER BY float_ops,
	FUNCTION 1 gateann_vector_to_real(vector);

-- halfvec (pgvector 0.7 and later; an older pgvector has none): the same
-- three metrics.  The index keeps single-precision records; a half value
-- converts to a float exactly, so distances are pgvector's.
DO $$
BEGIN
	IF to_regtype('halfvec') IS NULL THEN
		RAISE NOTICE 'pgvector has no halfvec type here: gateann_vector adds operator classes for vector only';
		RETURN;
	END IF;
	CREATE FUNCTION gateann_halfvec_to_real(halfvec) RETURNS real[]
		AS 'MODULE_PATHNAME', 'gateann_pghalfvec_to_real'
		LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
	CREATE OPERATOR CLASS halfvec_l2_ops DEFAULT FOR TYPE halfvec USING gateann AS
		OPERATOR 1 <-> (halfvec, halfvec) FOR ORDER BY float_ops,
		FUNCTION 1 gateann_halfvec_to_real(halfvec);
	CREATE OPERATOR CLASS halfvec_ip_ops FOR TYPE halfvec USING gateann AS
		OPERATOR 2 <#> (halfvec, halfvec) FOR ORDER BY float_ops,
		FUNCTION 1 gateann_halfvec_to_real(halfvec);
	CREATE OPERATOR CLASS halfvec_cosine_ops FOR TYPE halfvec USING gateann AS
		OPERATOR 3 <=> (halfvec, halfvec) FOR ORDER BY float_ops,
		FUNCTION 1 gateann_halfvec_to_real(halfvec);
END
$$;
