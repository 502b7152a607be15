/*
 * pq.h — residual product quantization: a coarse k-means quantizer of whole
 * vectors, and product quantization of what it leaves (the residual);
 * training, encoding, and per-query distance tables.
 *
 * Plain C (no PostgreSQL headers) so it can be unit-tested on its own.  It
 * never allocates: callers pass every buffer, sized with the *_bytes()
 * helpers, so the AM can account for memory against maintenance_work_mem and
 * use its own memory contexts.
 *
 * Why residuals: PQ spends its 256 centroids per subspace on where most of
 * the variance is.  In clustered data that is the spread between clusters,
 * and the small differences that rank a query's nearest neighbors inside
 * its cluster are coded coarsely: at 384 and 960 dimensions the PQ ranking
 * missed most of the true neighbors.  Coding x - c(x), with c(x) the
 * nearest of 256 coarse centroids, puts the codebooks on that local spread.
 *
 * A vector of `dims` floats: coarse centroid a = argmin ||x - C_a||, and the
 * residual r = x - C_a split into `m` contiguous subspaces (when m does not
 * divide dims, the first (dims % m) subspaces get one extra dimension), each
 * with GATEANN_PQ_CENTROIDS centroids.  A code is gateann_pq_code_bytes(m)
 * bytes:
 *
 *   m bytes    the residual's centroid in each subspace
 *   1 byte     a, the coarse centroid
 *   4 bytes    float4 (unaligned) ||r'||^2 + 2 <C_a, r'>, r' the coded
 *              residual: the part of the distance that depends on the node
 *              alone (see gateann_pq_code_distance)
 */
#ifndef GATEANN_PQ_H
#define GATEANN_PQ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "distance.h"

#define GATEANN_PQ_CENTROIDS 256
#define GATEANN_PQ_MAX_SUBSPACES 1024
/* The largest default code (gateann_pq_default_subspaces) */
#define GATEANN_PQ_DEFAULT_MAX 256

/* PQ training, for builds and retraining (retrain.c) alike */
#define GATEANN_PQ_TRAIN_SAMPLE		32768
#define GATEANN_PQ_TRAIN_ITERATIONS	12
#define GATEANN_PQ_SEED				UINT64_C(0x5051736565640001)

/* Code bytes beyond the m subspace bytes: the coarse id and a float4 */
#define GATEANN_PQ_CODE_EXTRA 5

/* Distance kinds a distance table can be built for. */
typedef enum GateannPQMetric
{
	GATEANN_PQ_L2 = 0,			/* squared L2 distance */
	GATEANN_PQ_IP = 1			/* -<q, x> (smaller is closer) */
} GateannPQMetric;

/*
 * Codebook view.  centroids points at dims*256 floats of residual
 * codebooks laid out subspace by subspace: subspace s occupies
 * 256 * sub_dims(s) floats starting at float offset 256 * sub_offset(s),
 * centroid c of subspace s starts at 256*sub_offset(s) + c*sub_dims(s).
 * coarse points at the 256 coarse centroids, dims floats each.  On disk and
 * in the stores both follow each other in one block of
 * gateann_pq_codebook_bytes (gateann_pq_attach).
 */
typedef struct GateannPQ
{
	int			dims;
	int			m;
	float	   *centroids;		/* dims * 256 floats, see above */
	float	   *coarse;			/* 256 * dims floats */
} GateannPQ;

/* Point pq at a codebook block of gateann_pq_codebook_bytes(dims). */
static inline void
gateann_pq_attach(GateannPQ *pq, int dims, int m, float *codebook)
{
	pq->dims = dims;
	pq->m = m;
	pq->centroids = codebook;
	pq->coarse = codebook + (size_t) dims * GATEANN_PQ_CENTROIDS;
}

/* Bytes of one code */
static inline size_t
gateann_pq_code_bytes(int m)
{
	return (size_t) m + GATEANN_PQ_CODE_EXTRA;
}

/* The coarse centroid a code is relative to (its k-means group) */
static inline int
gateann_pq_code_group(const uint8_t *code, int m)
{
	return code[m];
}

/* Floats of a distance table: m * 256 residual terms, 256 coarse, 1 weight */
static inline size_t
gateann_pq_table_floats(int m)
{
	return (size_t) m * GATEANN_PQ_CENTROIDS + GATEANN_PQ_CENTROIDS + 1;
}

/* First dimension of subspace s, and its width. */
extern int	gateann_pq_sub_offset(int dims, int m, int s);
extern int	gateann_pq_sub_dims(int dims, int m, int s);

/* Bytes of codebook for (dims): residual codebooks and coarse centroids. */
extern size_t gateann_pq_codebook_bytes(int dims);

/*
 * Default number of subspaces for a dimension count: a divisor of dims close
 * to dims/4, a byte per dimension up to 8 dimensions, at most 256.
 * Exactly: with T = min(256, max(dims/4, min(dims, 8))), the largest
 * divisor d of dims with T/2 <= d <= T, if there is one; if not, T with
 * the uneven split described above.  E.g. 2 -> 2, 8 -> 8, 12 -> 6,
 * 20 -> 5, 128 -> 32, 384 -> 96, 960 -> 240, 1536 -> 256, 16000 -> 250,
 * 13 -> 8 (uneven).
 */
extern int	gateann_pq_default_subspaces(int dims);

/* Scratch bytes gateann_pq_train needs for n sample vectors. */
extern size_t gateann_pq_train_scratch_bytes(int n, int dims, int m);

/*
 * Train the codebook pq points at (gateann_pq_attach): the coarse centroids
 * by k-means over the sample's rows, then each subspace's centroids by
 * k-means over the sample's residuals.  The sample (n rows of dims floats)
 * is overwritten with its residuals.  k-means is k-means++-free:
 * deterministic initialisation from a seeded PRNG choosing distinct sample
 * rows, then Lloyd iterations; empty clusters re-seeded deterministically
 * from the point farthest from its centroid.  Same inputs + seed =>
 * bit-identical codebook.  With n < 256, coarse centroid c is sample row
 * (c % n) (and the residual codebooks are trained on residuals of 0).
 * n == 0 leaves every centroid zero.  check_interrupts, if not NULL, is
 * called at least once per iteration and per subspace (the AM passes a
 * function that runs CHECK_FOR_INTERRUPTS; it may longjmp out, so hold no
 * state that needs cleanup across it).
 */
extern void gateann_pq_train(GateannPQ *pq, float *sample, int n,
							 uint64_t seed, int iterations, void *scratch,
							 void (*check_interrupts) (void));

/*
 * gateann_pq_train in its parts, for a caller that spreads them over
 * processes (pq_parallel.c) and must get the same codebook: the coarse
 * k-means's seed (gateann_kmeans_start), each sample row from..to-1 made
 * its residual once the coarse centroids are final, and the k-means of
 * subspace s over the n residual rows (its own seed, derived from seed and
 * s; scratch: gateann_pq_subspace_scratch_bytes).
 */
extern uint64_t gateann_pq_coarse_seed(uint64_t seed);
extern void gateann_pq_residuals(const GateannPQ *pq, float *sample, int from, int to);
extern size_t gateann_pq_subspace_scratch_bytes(int n, int dims, int m);
extern void gateann_pq_train_subspace(GateannPQ *pq, const float *residuals, int n,
									  uint64_t seed, int iterations, int s, void *scratch,
									  void (*check_interrupts) (void));

/*
 * Lloyd k-means in steps (what gateann_kmeans and gateann_pq_train run):
 * start seeds C with k distinct rows of X (n >= k) drawn with *rng and
 * marks every row unassigned; assign gives rows from..to-1 their nearest
 * centroid and its squared distance and returns how many changed (none:
 * converged); update moves every centroid to the mean of its rows (sums:
 * k * w doubles, counts: k ints) and re-seeds empty ones from the farthest
 * rows (dist is changed).  Rows assigned in any split give the same result.
 */
extern void gateann_kmeans_start(float *C, int k, const float *X, int n, int w,
								 uint64_t *rng, int *assign, int *chosen);
extern int	gateann_kmeans_assign(const float *C, int k, const float *X, int w,
								  int from, int to, int *assign, float *dist);
extern void gateann_kmeans_update(float *C, int k, const float *X, int n, int w,
								  const int *assign, float *dist, double *sums, int *counts);

/*
 * The same k-means over whole rows: C (caller-allocated, k * w floats)
 * receives k centroids of the n >= k rows of w floats in X (PQ's 256 use the
 * dispatched 256-centroid kernel).  Used to split large groups of full
 * vectors (order.c) and by gateann_kmeans() (routing.c).  Scratch:
 * gateann_kmeans_scratch_bytes.
 */
extern size_t gateann_kmeans_scratch_bytes(int k, int n, int w);
extern void gateann_kmeans(float *C, int k, const float *X, int n, int w, uint64_t seed,
						   int iterations, void *scratch,
						   void (*check_interrupts) (void));

/*
 * Encode one vector into gateann_pq_code_bytes(m) bytes; work: dims floats.
 * Returns the squared reconstruction error ||vec - decode(code)||^2; the
 * squared distance from vec to its coarse centroid goes to *coarse_dist
 * unless that is NULL.
 */
extern float gateann_pq_encode(const GateannPQ *pq, const float *vec, uint8_t *code,
							   float *work, float *coarse_dist);

/*
 * The mean squared distance from a coarse centroid to the nearest other
 * one (distinct ones only; 0 if all are equal): how far apart the regions
 * the training saw are.  A vector much farther than that from its coarse
 * centroid lies where the training saw nothing.
 */
extern float gateann_pq_coarse_spacing(const GateannPQ *pq);

/* Reconstruct the approximate vector a code stands for (dims floats). */
extern void gateann_pq_decode(const GateannPQ *pq, const uint8_t *code, float *out);

/*
 * Fill table (gateann_pq_table_floats(m) floats) for query q under metric.
 * Returns what the table's L2 distances are short of the true ones: 0,
 * unless the query lies so far from every coarse centroid, compared with
 * how far apart they are, that float terms ||q - C_a||^2 could no longer
 * tell the centroids apart (a vector far outside the data the codebook was
 * trained on): then the coarse terms are ||q - C_a||^2 - ||q - C_0||^2,
 * C_0 the centroid nearest q, computed without forming either square, and
 * every distance is ||q - C_0||^2 (the returned value) less than the
 * true one.  Distances of one table stay comparable with each other; a
 * caller comparing them with exact distances subtracts the value from
 * those.  0 for IP.
 */
extern double gateann_pq_distance_table(const GateannPQ *pq, const float *query,
										GateannPQMetric metric, float *table);

/*
 * The distance a table gives a code (the table's metric):
 *
 *   L2: ||q - C_a - r'||^2 = ||q - C_a||^2 - 2 <q, r'> + (||r'||^2 + 2 <C_a, r'>)
 *   IP: -<q, C_a + r'>     = -<q, C_a> - <q, r'>
 *
 * The residual sum is one ADC over the m subspace terms (distance.h's
 * kernel), the coarse term one lookup, the last term the code's own float
 * (weight 1 in an L2 table, 0 in an IP table).
 */
static inline float
gateann_pq_code_distance(const float *table, const uint8_t *code, int m)
{
	const float *tail = table + (size_t) m * GATEANN_PQ_CENTROIDS;
	float		bias;

	memcpy(&bias, code + m + 1, sizeof(float));
	return gateann_pq_adc(table, code, m) + tail[code[m]] + tail[GATEANN_PQ_CENTROIDS] * bias;
}

#endif							/* GATEANN_PQ_H */
