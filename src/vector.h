/*
 * vector.h — turning indexed values and query arguments into float arrays,
 * and the distance functions behind gateann's real[] operators.
 */
#ifndef GATEANN_VECTOR_H
#define GATEANN_VECTOR_H

#include "gateann.h"

#include "fmgr.h"
#include "utils/array.h"

/* Support function 1 (optional): convert the column's type to real[]. */
#define GATEANN_TO_REAL_ARRAY_PROC	1
#define GATEANN_NUM_PROCS			1

/*
 * How to read the first (vector) column of an index.  real[] and double
 * precision[] are read directly (the latter rounded to single precision as
 * a cast to real[] would); other types (pgvector's vector) go through the
 * operator class's support function 1.
 */
typedef struct GateannVectorReader
{
	bool		is_float_array;	/* real[] or double precision[] */
	bool		holds_halves;	/* binary16 values (pgvector's halfvec) */
	FmgrInfo   *to_real_array;	/* NULL for those */
	Oid			collation;
} GateannVectorReader;

extern void gateann_vector_reader_init(GateannVectorReader *reader, Relation index);

/*
 * Convert `value` to a newly palloc'd float array; *dims receives its
 * length.  Errors (with ERRCODE_DATA_EXCEPTION & co.) on multi-dimensional
 * arrays, NULL elements, empty arrays and more than GATEANN_MAX_DIMS
 * elements.  Elements an index cannot take are found by
 * gateann_first_unindexable so
 * the caller can name the row.
 */
extern float *gateann_vector_from_datum(const GateannVectorReader *reader,
										Datum value, int *dims);

/*
 * Elements of L2 and inner-product vectors are at most this in magnitude:
 * 16000 squared differences of such values still sum to a finite float4
 * (the distance kernels, the graph build and the PQ tables work in float4).
 * Cosine vectors are normalised first, in double.
 */
#define GATEANN_MAX_MAGNITUDE	1e16

/*
 * The elements of a one-dimensional array of real, double precision, numeric
 * or an integer type as floats (a real[]'s own, others converted); *dims
 * receives their count.  ERROR for NULL elements, another shape or type, no
 * element.
 */
extern float *gateann_array_vector(ArrayType *arr, int *dims);

/*
 * Index of the first element a gateann index of `metric` cannot take: NaN,
 * infinity, or (L2, inner product) beyond GATEANN_MAX_MAGNITUDE; -1 if none.
 */
extern int	gateann_first_unindexable(const float *v, int dims, GateannMetric metric);

/*
 * ERROR for element `at` of v (found by gateann_first_unindexable); `what`
 * names the vector ("vector in row (0,3) of \"t\"", "query vector").
 */
extern void gateann_report_unindexable(const char *what, const float *v, int at);

/* v's length, summed in double */
extern double gateann_vector_norm(const float *v, int dims);

/* Scale v to unit length; returns false (v untouched) for the zero vector. */
extern bool gateann_normalize(float *v, int dims);

/*
 * A value the SQL operator's distance for the same two vectors is never
 * below, from the internal form (squared L2, -dot, -dot of unit vectors)
 * that the single-precision kernels computed.  The operators compute in
 * double (real[], double precision[]) or accumulate in single precision in
 * their own order (pgvector's), so the two differ by rounding; the bound
 * takes off the most rounding the two computations can differ by (see the
 * function).  `norms` is |query| * |vector| for inner product, unused
 * otherwise.  `vector_error` bounds how far the distance to the vector the
 * kernel had can be from the distance to the row's (records of halves:
 * |x - half(x)|, times |query| for inner product; 0 otherwise).  The scan
 * returns it with xs_recheckorderby, so the executor orders rows by the
 * operator's own values.
 */
extern double gateann_distance_lower_bound(GateannMetric metric, float internal,
										   int dims, double norms, double vector_error);

/* Internal distance between two vectors (both normalised for cosine). */
extern float gateann_internal_distance(GateannMetric metric, const float *a,
									   const float *b, int dims);

#endif							/* GATEANN_VECTOR_H */
