/*
 * parallel.h — building the Vamana graph with parallel workers.
 */
#ifndef GATEANN_PARALLEL_H
#define GATEANN_PARALLEL_H

#include "graph.h"

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

#endif							/* GATEANN_PARALLEL_H */
