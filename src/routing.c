/*
 * routing.c — partitioning a table by vector cluster, and routing a query to
 * the partitions of its nearest clusters (README, "Several servers").
 *
 *   gateann_kmeans(vector, k)      aggregate: k centroids of the rows it is
 *                                  given (a sample: TABLESAMPLE), as a k x d
 *                                  real[] whose row c is cluster c's centre
 *   gateann_nearest_centroid(vector, centroids, rank)
 *                                  the cluster (0 .. k-1, a row of centroids)
 *                                  of the rank-th nearest centre to vector
 *
 * A table LIST-partitioned on a cluster column that an INSERT fills with
 * gateann_nearest_centroid(v, c, 1) is searched in the partitions of the m
 * nearest clusters by "cluster IN (gateann_nearest_centroid($1, $2, 1), ...
 * gateann_nearest_centroid($1, $2, m))": an IN list of expressions is what
 * PostgreSQL prunes partitions with, at plan time for constants and when
 * the executor starts for parameters ("cluster = ANY(array function)" is
 * never pruned).  Distances are Euclidean; for cosine data give unit
 * vectors.  The k-means is the index's own (pq.c): Lloyd's iterations from
 * k distinct rows chosen by a fixed seed, so one sample gives one result.
 */
#include "postgres.h"

#include <float.h>

#include "gateann.h"
#include "distance.h"
#include "pq.h"
#include "vector.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(gateann_kmeans_accum);
PG_FUNCTION_INFO_V1(gateann_kmeans_final);
PG_FUNCTION_INFO_V1(gateann_nearest_centroid);

/* Most clusters a table is split into (partitions, not PQ's codebooks) */
#define ROUTING_MAX_CLUSTERS	4096
/* Lloyd's iterations: they stop earlier once no row changes cluster */
#define ROUTING_ITERATIONS		25
#define ROUTING_SEED			UINT64_C(0x726F7574696E67)	/* "routing" */

typedef struct KmeansState
{
	int			k;
	int			dims;
	int64		n;				/* rows gathered */
	int64		capacity;		/* rows rows has room for */
	float	   *rows;			/* n x dims, in the aggregate's context */
} KmeansState;

static void
check_finite(const char *what, const float *v, int dims)
{
	int			at = gateann_first_unindexable(v, dims, GATEANN_METRIC_COSINE);

	if (at >= 0)
		gateann_report_unindexable(what, v, at);
}

Datum
gateann_kmeans_accum(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	KmeansState *st = PG_ARGISNULL(0) ? NULL : (KmeansState *) PG_GETARG_POINTER(0);
	float	   *v;
	int			dims;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "gateann_kmeans_accum called in non-aggregate context");
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("gateann_kmeans needs a number of clusters, not NULL")));
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(st);	/* rows without a vector are left out */
	v = gateann_array_vector(PG_GETARG_ARRAYTYPE_P(1), &dims);
	check_finite("vector given to gateann_kmeans", v, dims);
	if (st == NULL)
	{
		int			k = PG_GETARG_INT32(2);

		if (k < 1 || k > ROUTING_MAX_CLUSTERS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("gateann_kmeans makes 1 to %d clusters, not %d",
							ROUTING_MAX_CLUSTERS, k)));
		st = MemoryContextAllocZero(aggcxt, sizeof(KmeansState));
		st->k = k;
		st->dims = dims;
		st->capacity = 1024;
		st->rows = MemoryContextAllocHuge(aggcxt, sizeof(float) * dims * st->capacity);
	}
	else if (PG_GETARG_INT32(2) != st->k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gateann_kmeans was given %d clusters for one row and %d for another",
						st->k, PG_GETARG_INT32(2)),
				 errhint("Give the same number of clusters for every row.")));
	if (dims != st->dims)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("different vector dimensions %d and %d", st->dims, dims)));
	if (st->n == INT_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gateann_kmeans takes at most %d rows", INT_MAX),
				 errhint("Give it a sample: FROM t TABLESAMPLE SYSTEM (1).")));
	if (st->n == st->capacity)
	{
		st->capacity = Min(st->capacity * 2, (int64) INT_MAX);
		st->rows = repalloc_huge(st->rows, sizeof(float) * st->dims * st->capacity);
	}
	memcpy(st->rows + st->n * st->dims, v, sizeof(float) * dims);
	st->n++;
	PG_RETURN_POINTER(st);
}

Datum
gateann_kmeans_final(PG_FUNCTION_ARGS)
{
	KmeansState *st = PG_ARGISNULL(0) ? NULL : (KmeansState *) PG_GETARG_POINTER(0);
	float	   *centroids;
	void	   *scratch;
	Datum	   *elems;
	int			adims[2];
	int			lbs[2] = {1, 1};
	int64		i;

	if (st == NULL)
		PG_RETURN_NULL();		/* no rows with a vector */
	if (st->n < st->k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gateann_kmeans needs at least as many rows as clusters: %lld rows for %d clusters",
						(long long) st->n, st->k)));
	centroids = palloc(sizeof(float) * st->k * st->dims);
	scratch = MemoryContextAllocHuge(CurrentMemoryContext,
									 gateann_kmeans_scratch_bytes(st->k, (int) st->n, st->dims));
	gateann_kmeans(centroids, st->k, st->rows, (int) st->n, st->dims, ROUTING_SEED,
				   ROUTING_ITERATIONS, scratch, gateann_check_interrupts);
	pfree(scratch);
	elems = palloc(sizeof(Datum) * st->k * st->dims);
	for (i = 0; i < (int64) st->k * st->dims; i++)
		elems[i] = Float4GetDatum(centroids[i]);
	adims[0] = st->k;
	adims[1] = st->dims;
	PG_RETURN_ARRAYTYPE_P(construct_md_array(elems, NULL, 2, adims, lbs, FLOAT4OID,
											 sizeof(float4), true, TYPALIGN_INT));
}

/*
 * Centroids: a k x d real[] (what gateann_kmeans returns) or double
 * precision[] (what a client binds) without NULLs
 */
static const float *
centroid_rows(ArrayType *arr, int *k, int *dims)
{
	Oid			elemtype = ARR_ELEMTYPE(arr);
	float	   *rows;
	const double *in;
	int			i;

	if ((elemtype != FLOAT4OID && elemtype != FLOAT8OID) || ARR_NDIM(arr) != 2)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("centroids must be a two-dimensional real[] or double precision[], one centre a row"),
				 errhint("Make them with the aggregate gateann_kmeans(vector, k).")));
	if (ARR_HASNULL(arr) && array_contains_nulls(arr))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("centroids must not contain NULL elements")));
	*k = ARR_DIMS(arr)[0];
	*dims = ARR_DIMS(arr)[1];
	if (elemtype == FLOAT4OID)
		return (const float *) ARR_DATA_PTR(arr);
	in = (const double *) ARR_DATA_PTR(arr);
	rows = palloc(sizeof(float) * (Size) *k * *dims);
	for (i = 0; i < *k * *dims; i++)
		rows[i] = (float) in[i];
	return rows;
}

Datum
gateann_nearest_centroid(PG_FUNCTION_ARGS)
{
	int			dims;
	float	   *v = gateann_array_vector(PG_GETARG_ARRAYTYPE_P(0), &dims);
	int			k;
	int			cdims;
	const float *C = centroid_rows(PG_GETARG_ARRAYTYPE_P(1), &k, &cdims);
	int			rank = PG_GETARG_INT32(2);
	float	   *d;
	bool	   *taken;
	int			best = -1;
	int			c;
	int			r;

	if (cdims != dims)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("different vector dimensions %d and %d", dims, cdims)));
	if (rank < 1 || rank > k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rank must be between 1 and the %d centroids, not %d", k, rank)));
	check_finite("vector given to gateann_nearest_centroid", v, dims);
	check_finite("centroids", C, k * dims);
	d = palloc(sizeof(float) * k);
	taken = palloc0(sizeof(bool) * k);
	for (c = 0; c < k; c++)
		d[c] = gateann_l2sq(C + (size_t) c * dims, v, dims);
	/* rank passes of a selection: rank is small (the clusters a query visits) */
	for (r = 0; r < rank; r++)
	{
		best = -1;
		for (c = 0; c < k; c++)
			if (!taken[c] && (best < 0 || d[c] < d[best]))
				best = c;
		taken[best] = true;
	}
	PG_RETURN_INT32(best);
}
