/*
 * distance.h — vector distance kernels with runtime CPU dispatch.
 *
 * The binary must run on any x86-64 (or other) CPU regardless of where it
 * was compiled, so the AVX2/AVX-512 variants are compiled with function-level
 * target attributes and chosen once at load time from the running CPU's
 * features.  Everything here is plain C: no PostgreSQL headers, so the unit
 * tests can link it directly.
 */
#ifndef GATEANN_DISTANCE_H
#define GATEANN_DISTANCE_H

#include <stddef.h>
#include <stdint.h>

/* Squared Euclidean distance sum((a[i]-b[i])^2). */
extern float (*gateann_l2sq) (const float *a, const float *b, int dims);

/* Inner product sum(a[i]*b[i]). */
extern float (*gateann_dot) (const float *a, const float *b, int dims);

/*
 * Asymmetric PQ distance: sum over s in [0,m) of table[s*256 + code[s]].
 * table is m*256 floats laid out subspace-major.
 */
extern float (*gateann_pq_adc) (const float *table, const uint8_t *code, int m);

/*
 * PQ subspace kernels.  `centroids` points at the GATEANN_PQ_CENTROIDS (256)
 * centroids of one subspace, each `w` floats wide and stored contiguously
 * (centroid c at centroids + c*w, the pq.h codebook layout); x is the w-float
 * slice of the vector.  w >= 1.
 *
 * gateann_pq_nearest returns the index of the centroid closest to x in L2
 * (lowest index on exact ties) and, if dist is not NULL, stores its squared
 * distance there.
 * gateann_pq_l2_table stores out[c] = ||x - centroid c||^2 for all 256 c.
 * gateann_pq_ip_table stores out[c] = -<x, centroid c> for all 256 c.
 */
extern int	(*gateann_pq_nearest) (const float *centroids, const float *x, int w,
								   float *dist);
extern void (*gateann_pq_l2_table) (const float *centroids, const float *x, int w,
									float *out);
extern void (*gateann_pq_ip_table) (const float *centroids, const float *x, int w,
									float *out);

/*
 * Squared Euclidean distance from a vector to an 8-bit scalar code (a build's
 * copy of the vectors, graph.h): sum((qt[i] - step[i] * code[i])^2), where qt
 * is the vector less the code's low values (q[i] - low[i]).
 */
extern float (*gateann_l2sq_sq8) (const float *qt, const uint8_t *code,
								  const float *step, int dims);

/*
 * The SQL distance operators' sums, accumulated in double (vector.c):
 * sum((a[i] - b[i])^2), sum(a[i] * b[i]), and for cosine
 * sums = {a.b, a.a, b.b}.  Every implementation adds the same terms in the
 * same order (distance.c), so they agree to the bit but for fused
 * multiply-adds in the L2 sum.
 */
extern double (*gateann_l2sq_double) (const float *a, const float *b, int dims);
extern double (*gateann_dot_double) (const float *a, const float *b, int dims);
extern void (*gateann_cosine_sums) (const float *a, const float *b, int dims,
									double *sums);

/*
 * Pick the best implementation for the running CPU.  Idempotent; must be
 * called before the function pointers above are used (they start out pointing
 * at the scalar versions, so calling them early is safe, just slower).
 * If the environment variable GATEANN_FORCE_SCALAR is set to "1" the scalar
 * kernels are kept (used by tests to compare implementations).
 */
extern void gateann_distance_init(void);

/* "avx512", "avx2" or "scalar": what gateann_distance_init() chose. */
extern const char *gateann_distance_impl(void);

/* Scalar reference kernels, always available (tests compare against them). */
extern float gateann_l2sq_scalar(const float *a, const float *b, int dims);
extern float gateann_l2sq_sq8_scalar(const float *qt, const uint8_t *code,
									 const float *step, int dims);
extern float gateann_dot_scalar(const float *a, const float *b, int dims);
extern float gateann_pq_adc_scalar(const float *table, const uint8_t *code, int m);
extern int	gateann_pq_nearest_scalar(const float *centroids, const float *x, int w,
									  float *dist);
extern void gateann_pq_l2_table_scalar(const float *centroids, const float *x, int w,
									   float *out);
extern void gateann_pq_ip_table_scalar(const float *centroids, const float *x, int w,
									   float *out);
extern double gateann_l2sq_double_scalar(const float *a, const float *b, int dims);
extern double gateann_dot_double_scalar(const float *a, const float *b, int dims);
extern void gateann_cosine_sums_scalar(const float *a, const float *b, int dims,
									   double *sums);

/*
 * The full kernel set of one implementation, for tests and benchmarks that
 * want to exercise a specific variant regardless of what init chose.
 */
typedef struct GateannDistanceKernels
{
	float		(*l2sq) (const float *a, const float *b, int dims);
	float		(*dot) (const float *a, const float *b, int dims);
	float		(*pq_adc) (const float *table, const uint8_t *code, int m);
	int			(*pq_nearest) (const float *centroids, const float *x, int w,
							   float *dist);
	void		(*pq_l2_table) (const float *centroids, const float *x, int w,
								float *out);
	void		(*pq_ip_table) (const float *centroids, const float *x, int w,
								float *out);
	float		(*l2sq_sq8) (const float *qt, const uint8_t *code, const float *step,
							 int dims);
	double		(*l2sq_double) (const float *a, const float *b, int dims);
	double		(*dot_double) (const float *a, const float *b, int dims);
	void		(*cosine_sums) (const float *a, const float *b, int dims, double *sums);
} GateannDistanceKernels;

/*
 * Fill *out with the kernels of implementation impl ("scalar", "avx2" or
 * "avx512").  Returns 1 on success, 0 if that implementation is not compiled
 * in or the running CPU lacks the features it needs.
 */
extern int	gateann_distance_kernels(const char *impl, GateannDistanceKernels *out);

#endif							/* GATEANN_DISTANCE_H */
