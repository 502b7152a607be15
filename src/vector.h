/*
 * vector.h — turning indexed values and query arguments into float arrays,
 * and the distance functions behind gateann's real[] operators.
 */
#ifndef GATEANN_VECTOR_H
#define GATEANN_VECTOR_H

#include "gateann.h"

#include "fmgr.h"

/* Support function 1 (optional): convert the column's type to real[]. */
#define GATEANN_TO_REAL_ARRAY_PROC	1
#define GATEANN_NUM_PROCS			1

/*
 * How to read the first (vector) column of an index.  For real[] no
 * conversion is needed; other types (pgvector's vector) go through the
 * operator class's support function 1.
 */
typedef struct GateannVectorReader
{
	bool		is_real_array;
	FmgrInfo   *to_real_array;	/* NULL for real[] */
	Oid			collation;
} GateannVectorReader;

extern void gateann_vector_reader_init(GateannVectorReader *reader, Relation index);

/*
 * Convert `value` to a newly palloc'd float array; *dims receives its
 * length.  Errors (with ERRCODE_DATA_EXCEPTION & co.) on multi-dimensional
 * arrays, NULL elements, empty arrays and more than GATEANN_MAX_DIMS
 * elements.  Non-finite elements are reported by gateann_first_nonfinite so
 * the caller can name the row.
 */
extern float *gateann_vector_from_datum(const GateannVectorReader *reader,
										Datum value, int *dims);

/* Index of the first NaN/Inf element, or -1. */
extern int	gateann_first_nonfinite(const float *v, int dims);

/* Scale v to unit length; returns false (v untouched) for the zero vector. */
extern bool gateann_normalize(float *v, int dims);

/*
 * Distance as the SQL operator reports it, from the internal form:
 * internal distances are squared L2, -dot, and -dot of unit vectors.
 */
extern double gateann_distance_to_sql(GateannMetric metric, float internal);

/* Internal distance between two vectors (both normalised for cosine). */
extern float gateann_internal_distance(GateannMetric metric, const float *a,
									   const float *b, int dims);

#endif							/* GATEANN_VECTOR_H */
