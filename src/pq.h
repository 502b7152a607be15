/*
 * pq.h — product quantization: k-means training of per-subspace codebooks,
 * encoding, and per-query distance tables.
 *
 * Plain C (no PostgreSQL headers) so it can be unit-tested on its own.  It
 * never allocates: callers pass every buffer, sized with the *_bytes()
 * helpers, so the AM can account for memory against maintenance_work_mem and
 * use its own memory contexts.
 *
 * A vector of `dims` floats is split into `m` contiguous subspaces.  When m
 * does not divide dims, the first (dims % m) subspaces get one extra
 * dimension.  Each subspace has GATEANN_PQ_CENTROIDS centroids; a code is one
 * byte per subspace.
 */
#ifndef GATEANN_PQ_H
#define GATEANN_PQ_H

#include <stddef.h>
#include <stdint.h>

#define GATEANN_PQ_CENTROIDS 256
#define GATEANN_PQ_MAX_SUBSPACES 1024

/* Distance kinds a distance table can be built for. */
typedef enum GateannPQMetric
{
	GATEANN_PQ_L2 = 0,			/* table[s][c] = ||q_s - c||^2 */
	GATEANN_PQ_IP = 1			/* table[s][c] = -<q_s, c> (smaller is closer) */
} GateannPQMetric;

/*
 * Codebook view.  centroids points at dims*256 floats laid out subspace by
 * subspace: subspace s occupies
 * 256 * sub_dims(s) floats starting at float offset 256 * sub_offset(s),
 * centroid c of subspace s starts at 256*sub_offset(s) + c*sub_dims(s).
 * (So the codebook is exactly dims*256 floats for any m.)
 */
typedef struct GateannPQ
{
	int			dims;
	int			m;
	float	   *centroids;		/* dims * 256 floats, see above */
} GateannPQ;

/* First dimension of subspace s, and its width. */
extern int	gateann_pq_sub_offset(int dims, int m, int s);
extern int	gateann_pq_sub_dims(int dims, int m, int s);

/* Bytes of codebook for (dims): dims * 256 * sizeof(float). */
extern size_t gateann_pq_codebook_bytes(int dims);

/*
 * Default number of subspaces for a dimension count: a divisor of dims close
 * to dims/4, never more than 96, never less than 1.  Exactly: with
 * T = min(96, max(1, dims/4)), the largest divisor d of dims with
 * T/2 <= d <= T (i.e. [dims/8, dims/4] while dims <= 768, [48, 96] above);
 * if dims has no divisor in that range, T with the uneven split described
 * above.  E.g. 128 -> 32, 768 -> 96, 16000 -> 80, 13 -> 3, 3 -> 1.
 */
extern int	gateann_pq_default_subspaces(int dims);

/* Scratch bytes gateann_pq_train needs for n sample vectors. */
extern size_t gateann_pq_train_scratch_bytes(int n, int dims, int m);

/*
 * Train pq->centroids (caller-allocated, gateann_pq_codebook_bytes(dims))
 * with k-means (k-means++-free: deterministic initialisation from a seeded
 * PRNG choosing distinct sample rows, then Lloyd iterations; empty clusters
 * re-seeded deterministically from the point farthest from its centroid).
 * Same inputs + seed => bit-identical codebook.  If n < 256, centroid c of a
 * subspace is sample row (c % n)'s slice.  n == 0 leaves all centroids zero.
 * check_interrupts, if not NULL, is called at least once per iteration and per
 * subspace (the AM passes a function that runs CHECK_FOR_INTERRUPTS; it may
 * longjmp out, so hold no state that needs cleanup across it).
 */
extern void gateann_pq_train(GateannPQ *pq, const float *sample, int n,
							 uint64_t seed, int iterations, void *scratch,
							 void (*check_interrupts) (void));

/*
 * The same k-means over whole rows: C (caller-allocated, 256 * w floats)
 * receives 256 centroids of the n >= 256 rows of w floats in X.  Used to
 * cluster full vectors (order.c).  Scratch: gateann_kmeans_scratch_bytes.
 */
extern size_t gateann_kmeans_scratch_bytes(int n, int w);
extern void gateann_kmeans(float *C, const float *X, int n, int w, uint64_t seed,
						   int iterations, void *scratch,
						   void (*check_interrupts) (void));

/* Encode one vector into m bytes (nearest centroid per subspace, L2). */
extern void gateann_pq_encode(const GateannPQ *pq, const float *vec, uint8_t *code);

/* Reconstruct the approximate vector a code stands for (dims floats). */
extern void gateann_pq_decode(const GateannPQ *pq, const uint8_t *code, float *out);

/* Fill table (m * 256 floats) for query q under metric. */
extern void gateann_pq_distance_table(const GateannPQ *pq, const float *query,
									  GateannPQMetric metric, float *table);

#endif							/* GATEANN_PQ_H */
