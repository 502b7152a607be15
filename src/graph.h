/*
 * graph.h — in-memory Vamana graph construction (DiskANN's two-pass build
 * with robust prune) over full-precision vectors.
 */
#ifndef GATEANN_GRAPH_H
#define GATEANN_GRAPH_H

#include "gateann.h"

typedef struct GateannGraph
{
	int			dims;
	GateannMetric metric;		/* vectors are unit length for cosine */
	uint32		n;
	const float *vectors;		/* n * dims */
	int			R;				/* final max degree */
	int			capacity;		/* slots per node while building (> R: slack) */
	uint32	   *adj;			/* n * capacity */
	uint16	   *degree;			/* n */
	uint32		medoid;
} GateannGraph;

/* Bytes gateann_graph_build needs for n nodes (adjacency + scratch). */
extern Size gateann_graph_memory(uint32 n, int R, int L);

/*
 * Build the graph: medoid entry point, pass 1 at alpha 1.0, pass 2 at alpha,
 * both over a deterministic random permutation.  progress(done, total) is
 * called every few hundred nodes (it may CHECK_FOR_INTERRUPTS).
 */
extern void gateann_graph_build(GateannGraph *graph, int L, float alpha,
								void (*progress) (int pass, uint32 done, uint32 total));

#endif							/* GATEANN_GRAPH_H */
