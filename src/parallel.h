/*
 * parallel.h — the build's work with parallel workers: the PQ codebook's
 * training (pq_parallel.c), encoding and ordering (parallel_vectors.c), the
 * Vamana graph (parallel.c).
 */
#ifndef GATEANN_PARALLEL_H
#define GATEANN_PARALLEL_H

#include "graph.h"
#include "pq.h"

#include "access/parallel.h"

/* Below this many vectors a parallel build is not worth starting. */
#define GATEANN_PARALLEL_MIN_NODES	10000

/* Bytes of the dynamic shared memory a parallel build of graph needs. */
extern Size gateann_parallel_graph_bytes(const GateannGraph *graph);

/*
 * Build graph (vectors, n, dims, R set) with up to nworkers workers plus
 * the leader (gateann_graph_complete's arguments as for the serial
 * build).  On success adj/degree/order are palloc'd copies in the
 * current memory context and true is returned; false means no dynamic
 * shared memory could be had and the caller should build serially.
 */
extern bool gateann_graph_build_parallel(GateannGraph *graph, const uint32 *entries,
										 int nentries, int L, float alpha,
										 int r_max, bool choose_r_max, int nworkers,
										 void (*progress) (int pass, uint32 done, uint32 total));

/*
 * Enter parallel mode with a context that runs function (exported by this
 * library) in up to nworkers workers, and a shared area of bytes under key
 * in its table of contents (*shared); NULL: no dynamic shared memory, and
 * parallel mode left again.  gateann_parallel_end destroys the context
 * (waiting for its workers) and leaves parallel mode.
 */
extern ParallelContext *gateann_parallel_begin(const char *function, int nworkers, Size bytes,
											   uint64 key, void **shared);
extern void gateann_parallel_end(ParallelContext *pcxt);

/* An array in a shared area, at the offset its field holds */
#define GATEANN_SHARED_ARRAY(sh, type, field) ((type) ((char *) (sh) + (sh)->field))

/* Rows a participant claims at a time where work goes row by row */
#define GATEANN_PARALLEL_ROW_CHUNK	1024

/* Bytes of the dynamic shared memory a parallel training on n rows needs. */
extern Size gateann_parallel_pq_bytes(int n, int dims);

/*
 * Train pq (attached, dims and m set) on the n >= 256 rows of sample with
 * up to nworkers workers plus the leader: the codebook gateann_pq_train
 * gives for the same sample, seed and iterations (the sample is left as
 * it is).  False: no dynamic shared memory could be had and the caller
 * should train serially.
 */
extern bool gateann_pq_train_parallel(GateannPQ *pq, const float *sample, int n,
									  uint64 seed, int iterations, int nworkers);

/*
 * The build's work on every vector with up to nworkers workers plus the
 * leader (parallel_vectors.c), on a shared copy of the n vectors and of
 * pq's codebook: begin (NULL: no dynamic shared memory, work serially),
 * then encode (codes: gateann_pq_code_bytes(pq->m) each; coarse_dist: each
 * vector's squared distance to its coarse centroid, as gateann_pq_encode
 * gives), then, given those codes, the locality order (order.h: the
 * order gateann_locality_order gives), then end.
 */
typedef struct GateannVectorWork GateannVectorWork;

extern Size gateann_vector_work_bytes(uint32 n, int dims, int m);
extern GateannVectorWork *gateann_vector_work_begin(const GateannPQ *pq, const float *vectors,
													uint32 n, int nworkers);
extern void gateann_vector_work_encode(GateannVectorWork *w, uint8 *codes, float *coarse_dist);
extern void gateann_vector_work_order(GateannVectorWork *w, const uint8 *codes, uint64 seed,
									  uint32 *order);
extern void gateann_vector_work_end(GateannVectorWork *w);

#endif							/* GATEANN_PARALLEL_H */
