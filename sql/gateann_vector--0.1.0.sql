-- gateann_vector extension, version 0.1.0: gateann operator classes for
-- pgvector's vector and halfvec types, using pgvector's own operators.
\echo Use "CREATE EXTENSION gateann_vector" to load this file. \quit

-- For each type: support function 1 (the value as real[], read by gateann's
-- library: gateann_vector_to_real, gateann_halfvec_to_real) and the classes
-- <type>_l2_ops (the default), <type>_ip_ops and <type>_cosine_ops.  halfvec
-- exists from pgvector 0.7 on; with an older pgvector, vector's classes only.
-- The index keeps single-precision records; a half converts to a float
-- exactly, so distances are pgvector's.
DO $$
DECLARE
	t record;
BEGIN
	FOR t IN SELECT * FROM (VALUES ('vector', 'gateann_pgvector_to_real'),
								   ('halfvec', 'gateann_pghalfvec_to_real')) AS v(typ, symbol)
	LOOP
		IF to_regtype(t.typ) IS NULL THEN
			RAISE NOTICE 'pgvector has no % type here: gateann_vector adds no operator classes for it', t.typ;
			CONTINUE;
		END IF;
		EXECUTE format($f$CREATE FUNCTION gateann_%1$s_to_real(%1$s) RETURNS real[]
			AS 'MODULE_PATHNAME', %2$L LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE$f$,
			t.typ, t.symbol);
		EXECUTE format($f$CREATE OPERATOR CLASS %1$s_l2_ops DEFAULT FOR TYPE %1$s USING gateann AS
			OPERATOR 1 <-> (%1$s, %1$s) FOR ORDER BY float_ops,
			FUNCTION 1 gateann_%1$s_to_real(%1$s)$f$, t.typ);
		EXECUTE format($f$CREATE OPERATOR CLASS %1$s_ip_ops FOR TYPE %1$s USING gateann AS
			OPERATOR 2 <#> (%1$s, %1$s) FOR ORDER BY float_ops,
			FUNCTION 1 gateann_%1$s_to_real(%1$s)$f$, t.typ);
		EXECUTE format($f$CREATE OPERATOR CLASS %1$s_cosine_ops FOR TYPE %1$s USING gateann AS
			OPERATOR 3 <=> (%1$s, %1$s) FOR ORDER BY float_ops,
			FUNCTION 1 gateann_%1$s_to_real(%1$s)$f$, t.typ);
	END LOOP;
END
$$;
