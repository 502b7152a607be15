-- gateann_vector extension, version 0.1.0: gateann operator classes for
-- pgvector's vector type, using pgvector's own operators.
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
