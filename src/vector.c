/*
 * vector.c — vector values: conversion, validation, and the distance
 * functions behind the real[] operators <->, <#> and <=>.
 */
#include "postgres.h"

#include <math.h>

#include "vector.h"
#include "distance.h"
#include "half.h"

#include "access/genam.h"
#include "catalog/pg_type.h"
#include "catalog/pg_class.h"
#include "nodes/pathnodes.h"
#include "nodes/supportnodes.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(gateann_l2_distance);
PG_FUNCTION_INFO_V1(gateann_negative_inner_product);
PG_FUNCTION_INFO_V1(gateann_cosine_distance);
PG_FUNCTION_INFO_V1(gateann_distance_support);
PG_FUNCTION_INFO_V1(gateann_pgvector_to_real);
PG_FUNCTION_INFO_V1(gateann_pghalfvec_to_real);

void
gateann_vector_reader_init(GateannVectorReader *reader, Relation index)
{
	Oid			typid = TupleDescAttr(RelationGetDescr(index), 0)->atttypid;

	reader->is_float_array = (typid == FLOAT4ARRAYOID || typid == FLOAT8ARRAYOID);
	reader->holds_halves = false;
	reader->to_real_array = NULL;
	reader->collation = index->rd_indcollation[0];
	if (!reader->is_float_array)
	{
		if (!OidIsValid(index_getprocid(index, 1, GATEANN_TO_REAL_ARRAY_PROC)))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("gateann cannot index column type %s as a vector",
							format_type_be(typid)),
					 errhint("The first column of a gateann index must be real[], double precision[] or, with extension gateann_vector, pgvector's vector or halfvec.")));
		reader->to_real_array = index_getprocinfo(index, 1, GATEANN_TO_REAL_ARRAY_PROC);
		/* (gateann_vector's halfvec classes convert with our own function) */
		reader->holds_halves = (reader->to_real_array->fn_addr == gateann_pghalfvec_to_real);
	}
}

/*
 * Validate a one-dimensional array of real, double precision, numeric or
 * an integer type and return its elements as floats: a real[]'s own (no copy), the
 * others converted into a palloc'd array (what clients bind: a list of
 * floats is a double precision[]; the same as casting it to real[], except
 * that a double below real's range becomes zero).  Index values of a double
 * precision[] column and the operators' arguments go through here alike.
 */
float *
gateann_array_vector(ArrayType *arr, int *dims)
{
	Oid			elemtype = ARR_ELEMTYPE(arr);
	int			n;
	float	   *dst;
	int			i;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("vector must be a one-dimensional array, not %d-dimensional",
						ARR_NDIM(arr))));
	if (ARR_HASNULL(arr) && array_contains_nulls(arr))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("vector must not contain NULL elements")));
	if (elemtype != FLOAT4OID && elemtype != FLOAT8OID && elemtype != NUMERICOID &&
		elemtype != INT2OID && elemtype != INT4OID && elemtype != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("vector must be an array of real, double precision, numeric or integer")));
	n = ARR_NDIM(arr) == 0 ? 0 : ARR_DIMS(arr)[0];
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vector must have at least 1 dimension")));
	*dims = n;
	if (elemtype == FLOAT4OID)
		return (float *) ARR_DATA_PTR(arr);
	if (n > GATEANN_MAX_DIMS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("vector has %d dimensions, gateann indexes at most %d",
						n, GATEANN_MAX_DIMS)));
	dst = palloc(sizeof(float) * n);
	if (elemtype == FLOAT8OID)
	{
		const float8 *src = (const float8 *) ARR_DATA_PTR(arr);

		for (i = 0; i < n; i++)
		{
			dst[i] = (float) src[i];
			/*
			 * Beyond real's range an error, as the cast to real[] gives;
			 * below it the nearest float (zero), where the cast errors: a
			 * double precision[] row the table takes can be indexed.
			 */
			if (unlikely(isinf(dst[i])) && !isinf(src[i]))
				float_overflow_error();
		}
	}
	else if (elemtype == INT2OID)
	{
		const int16 *src = (const int16 *) ARR_DATA_PTR(arr);

		for (i = 0; i < n; i++)
			dst[i] = (float) src[i];
	}
	else if (elemtype == INT4OID)
	{
		const int32 *src = (const int32 *) ARR_DATA_PTR(arr);

		for (i = 0; i < n; i++)
			dst[i] = (float) src[i];
	}
	else if (elemtype == INT8OID)
	{
		const int64 *src = (const int64 *) ARR_DATA_PTR(arr);

		for (i = 0; i < n; i++)
			dst[i] = (float) src[i];
	}
	else
	{
		Datum	   *elems;
		int			nelems;

		deconstruct_array(arr, NUMERICOID, -1, false, TYPALIGN_INT, &elems, NULL, &nelems);
		for (i = 0; i < nelems; i++)
			dst[i] = DatumGetFloat4(DirectFunctionCall1(numeric_float4, elems[i]));
		pfree(elems);
	}
	return dst;
}

float *
gateann_vector_from_datum(const GateannVectorReader *reader, Datum value, int *dims)
{
	ArrayType  *arr;
	float	   *elems;
	float	   *result;
	int			n;

	if (reader->is_float_array)
		arr = DatumGetArrayTypeP(value);
	else
		arr = DatumGetArrayTypeP(FunctionCall1Coll(reader->to_real_array,
												   reader->collation, value));
	elems = gateann_array_vector(arr, &n);
	if (n > GATEANN_MAX_DIMS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("vector has %d dimensions, gateann indexes at most %d",
						n, GATEANN_MAX_DIMS)));
	if (ARR_ELEMTYPE(arr) != FLOAT4OID)
		result = elems;			/* a converted copy already */
	else
	{
		result = palloc(sizeof(float) * n);
		memcpy(result, elems, sizeof(float) * n);
	}
	if ((Pointer) arr != DatumGetPointer(value))
		pfree(arr);
	*dims = n;
	return result;
}

int
gateann_first_unindexable(const float *v, int dims, GateannMetric metric)
{
	int			i;

	for (i = 0; i < dims; i++)
		if (!isfinite(v[i]) ||
			(metric != GATEANN_METRIC_COSINE && fabsf(v[i]) > GATEANN_MAX_MAGNITUDE))
			return i;
	return -1;
}

void
gateann_report_unindexable(const char *what, const float *v, int at)
{
	if (!isfinite(v[at]))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s has a non-finite value (%g) in dimension %d",
						what, (double) v[at], at + 1),
				 errhint("NaN and infinity cannot be indexed or searched for; fix or exclude the row.")));
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("%s has a value (%g) in dimension %d beyond the magnitude gateann can index (%g)",
					what, (double) v[at], at + 1, GATEANN_MAX_MAGNITUDE),
			 errhint("Distances between such values overflow single precision; scale the vectors, or index them with a cosine operator class.")));
}

double
gateann_vector_norm(const float *v, int dims)
{
	double		sq = 0;
	int			i;

	for (i = 0; i < dims; i++)
		sq += (double) v[i] * v[i];
	return sqrt(sq);
}

bool
gateann_normalize(float *v, int dims)
{
	double		norm = gateann_vector_norm(v, dims);
	int			i;

	if (norm <= 0 || !isfinite(norm))
		return false;
	for (i = 0; i < dims; i++)
		v[i] = (float) (v[i] / norm);
	return true;
}

/*
 * Rounding of the distance kernels and the operators, with u = 2^-24 the
 * unit roundoff of single precision and n the dimensions (first-order error
 * bounds of recursive or blocked summation, in any order):
 * - squared L2: each difference, its square and each addition round once,
 *   so a sum in single precision is within (n + 3)u of the exact one,
 *   relative (every term is positive); results in the subnormal range add
 *   at most 2^-150 per operation, absolute;
 * - a dot product is within (n + 1)u * sum |a_i b_i| <= (n + 1)u |a| |b|;
 * - cosine: our unit vectors are each element within u of the exact ones,
 *   so -dot of them is within (n + 3)u of -cos; pgvector's operator divides
 *   its single-precision dot by its single-precision norms: within 2nu.
 * The kernels and the operators each contribute once (an operator in double
 * contributes next to nothing); the bound takes off twice their sum.
 */
#define ROUNDING_UNIT	(1.0 / (1 << 24))
#define SUBNORMAL_ULP	(ldexp(1.0, -149))

/*
 * A record of halves holds x~ for the row's x: |q - x| >= |q - x~| - |x - x~|
 * and q.x >= q.x~ - |q| |x - x~|, whence vector_error comes off last.
 */
double
gateann_distance_lower_bound(GateannMetric metric, float internal, int dims,
							 double norms, double vector_error)
{
	double		n = dims;
	double		d = internal;

	switch (metric)
	{
		case GATEANN_METRIC_L2:
			d = d * (1.0 - 4.0 * (n + 3.0) * ROUNDING_UNIT) - 4.0 * n * SUBNORMAL_ULP;
			return Max(sqrt(Max(d, 0.0)) - vector_error, 0.0);
		case GATEANN_METRIC_IP:
			return d - 4.0 * (n + 1.0) * ROUNDING_UNIT * norms - 4.0 * n * SUBNORMAL_ULP -
				vector_error;
		case GATEANN_METRIC_COSINE:
			/* 1 - cos, within the range the operators clamp it to */
			d = 1.0 + d - 2.0 * (3.0 * n + 3.0) * ROUNDING_UNIT - vector_error;
			return Min(Max(d, 0.0), 2.0);
	}
	return d;
}

float
gateann_internal_distance(GateannMetric metric, const float *a, const float *b, int dims)
{
	if (metric == GATEANN_METRIC_L2)
		return gateann_l2sq(a, b, dims);
	return -gateann_dot(a, b, dims);
}

/*
 * SQL-callable distances on real[].  They accumulate in double (the
 * distance.h kernels): they are the reference the executor and the tests
 * use.
 */
/* The two real[] arguments of a distance function, of the same dimensions */
static int
distance_arguments(FunctionCallInfo fcinfo, float **a, float **b)
{
	int			na,
				nb;

	*a = gateann_array_vector(PG_GETARG_ARRAYTYPE_P(0), &na);
	*b = gateann_array_vector(PG_GETARG_ARRAYTYPE_P(1), &nb);
	if (na != nb)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("different vector dimensions %d and %d", na, nb)));
	return na;
}

Datum
gateann_l2_distance(PG_FUNCTION_ARGS)
{
	float	   *a,
			   *b;
	int			n = distance_arguments(fcinfo, &a, &b);

	PG_RETURN_FLOAT8(sqrt(gateann_l2sq_double(a, b, n)));
}

Datum
gateann_negative_inner_product(PG_FUNCTION_ARGS)
{
	float	   *a,
			   *b;
	int			n = distance_arguments(fcinfo, &a, &b);

	PG_RETURN_FLOAT8(-gateann_dot_double(a, b, n));
}

Datum
gateann_cosine_distance(PG_FUNCTION_ARGS)
{
	float	   *a,
			   *b;
	int			n = distance_arguments(fcinfo, &a, &b);
	double		sums[3],
				sim;

	gateann_cosine_sums(a, b, n, sums);
	/* Like pgvector: the distance to or from a zero vector is NaN. */
	if (sums[1] == 0 || sums[2] == 0)
		PG_RETURN_FLOAT8(get_float8_nan());
	sim = sums[0] / sqrt(sums[1] * sums[2]);
	sim = Min(Max(sim, -1.0), 1.0);
	PG_RETURN_FLOAT8(1.0 - sim);
}

/*
 * Support functions 1 of the gateann_vector operator classes: pgvector's
 * `vector` and `halfvec` to real[].  Both are a varlena holding int16 dim,
 * int16 unused, then dim elements (float4, or IEEE binary16); we read them
 * here so that gateann's library does not link against pgvector's.  Every
 * half value is exactly a float, so distances are those of pgvector's
 * halfvec operators, which also compute in single precision.
 */
typedef struct PgvectorHeader
{
	int32		vl_len_;
	int16		dim;
	int16		unused;
} PgvectorHeader;

/* A pgvector value of elements of elem_size bytes (4: float4, 2: binary16) as real[] */
static ArrayType *
pgvector_value_to_real(Datum value, Size elem_size, const char *type)
{
	PgvectorHeader *v = (PgvectorHeader *) PG_DETOAST_DATUM(value);
	const char *x = (const char *) v + sizeof(PgvectorHeader);
	Datum	   *elems;
	int			i;

	if (v->dim < 1 || VARSIZE(v) < sizeof(PgvectorHeader) + elem_size * v->dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("malformed %s value", type)));
	elems = palloc(sizeof(Datum) * v->dim);
	for (i = 0; i < v->dim; i++)
	{
		if (elem_size == sizeof(float4))
		{
			float4		f;

			memcpy(&f, x + i * sizeof(float4), sizeof(f));
			elems[i] = Float4GetDatum(f);
		}
		else
		{
			uint16		h;

			memcpy(&h, x + i * sizeof(uint16), sizeof(h));
			elems[i] = Float4GetDatum(gateann_half_to_float(h));
		}
	}
	return construct_array(elems, v->dim, FLOAT4OID, sizeof(float4), true, TYPALIGN_INT);
}

Datum
gateann_pgvector_to_real(PG_FUNCTION_ARGS)
{
	PG_RETURN_ARRAYTYPE_P(pgvector_value_to_real(PG_GETARG_DATUM(0), sizeof(float4), "vector"));
}

Datum
gateann_pghalfvec_to_real(PG_FUNCTION_ARGS)
{
	PG_RETURN_ARRAYTYPE_P(pgvector_value_to_real(PG_GETARG_DATUM(0), sizeof(uint16), "halfvec"));
}

/*
 * What one call of a distance function costs, in cpu_operator_cost units
 * (the default 0.0025 of a sequential page, which takes about a
 * microsecond to scan: a unit is some 2.5 ns).  Measured over 100K rows of
 * a table in shared buffers, sum(v <-> q) against sum(id::float8), with
 * the distance.h double sums: L2 / cosine 29 / 35 ns a call at 8
 * dimensions, 113 / 157 ns at 128, 291 / 358 ns at 384: some 25 ns and
 * 0.75 ns a dimension (reading the row's array is much of it).  Counted as
 * one unit, as functions are by default, a sequential scan and sort of a
 * 1,000-row table looked cheaper than an index scan that took half its
 * time (bench/run.sh plans).
 */
#define DISTANCE_CALL_COST		10.0
#define DISTANCE_DIMENSION_COST	0.3
/* when no argument is a constant (a parameter, or two columns) */
#define DISTANCE_DEFAULT_DIMS	256

/*
 * Is an argument a column of a foreign table (a shard's, through
 * postgres_fdw)?  Its rows' distances are computed here only for the rows
 * the shard returns, and postgres_fdw charges its path that sends the
 * shard a LIMIT for a row or two more distances than the path that keeps
 * the LIMIT here, more than its own 5 % preference for the remote one: at
 * the price below it stopped sending LIMIT 10 to shards of a few thousand
 * rows.  Such a call keeps the default price of a function.
 */
static bool
on_foreign_table(PlannerInfo *root, List *args)
{
	ListCell   *lc;

	if (root == NULL)
		return false;
	foreach(lc, args)
	{
		Var		   *var = (Var *) lfirst(lc);
		RangeTblEntry *rte;

		if (!IsA(var, Var) || var->varlevelsup != 0 || var->varno < 1 ||
			var->varno >= root->simple_rel_array_size || root->simple_rte_array == NULL)
			continue;
		rte = root->simple_rte_array[var->varno];
		if (rte != NULL && rte->rtekind == RTE_RELATION &&
			rte->relkind == RELKIND_FOREIGN_TABLE)
			return true;
	}
	return false;
}

/*
 * gateann_distance_support(internal): the planner support function of the
 * distance functions.  It answers SupportRequestCost by the dimensions of
 * a constant argument (the query vector), else DISTANCE_DEFAULT_DIMS; on a
 * foreign table's column, one cpu_operator_cost (on_foreign_table).
 */
Datum
gateann_distance_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	SupportRequestCost *req;
	List	   *args = NIL;
	ListCell   *lc;
	double		dims = DISTANCE_DEFAULT_DIMS;

	if (!IsA(rawreq, SupportRequestCost))
		PG_RETURN_POINTER(NULL);
	req = (SupportRequestCost *) rawreq;
	if (req->node != NULL && IsA(req->node, OpExpr))
		args = ((OpExpr *) req->node)->args;
	else if (req->node != NULL && IsA(req->node, FuncExpr))
		args = ((FuncExpr *) req->node)->args;
	if (on_foreign_table(req->root, args))
		PG_RETURN_POINTER(NULL);	/* the function's own cost */
	foreach(lc, args)
	{
		Const	   *arg = (Const *) lfirst(lc);

		if (IsA(arg, Const) && !arg->constisnull && type_is_array(arg->consttype))
		{
			ArrayType  *arr = DatumGetArrayTypeP(arg->constvalue);

			dims = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
			break;
		}
	}
	req->startup = 0;
	req->per_tuple = (DISTANCE_CALL_COST + DISTANCE_DIMENSION_COST * dims) * cpu_operator_cost;
	PG_RETURN_POINTER(req);
}
