/*
 * graph.h — in-memory Vamana graph construction (one pass, or DiskANN's
 * two, with robust prune) over full-precision vectors.
 */
#ifndef GATEANN_GRAPH_H
#define GATEANN_GRAPH_H

#include "gateann.h"

#include "storage/spin.h"

typedef struct GateannGraph
{
	int			dims;
	uint32		n;
	const float *vectors;		/* n * dims */

	/*
	 * An 8-bit copy of the vectors (gateann_graph_quantize) that the build's
	 * searches rank candidates by; prunes and probes use the vectors.  NULL
	 * codes: every distance exact.
	 */
	const uint8 *sq_codes;		/* n * dims */
	const float *sq_low;		/* dims: the value code 0 stands for */
	const float *sq_step;		/* dims: the value of one code step */
	int			R;				/* final max degree */
	int			capacity;		/* slots per node while building (> R: slack) */
	uint32	   *adj;			/* n * capacity */
	uint16	   *degree;			/* n */
	uint32	   *order;			/* n: the visiting order of both passes */

	/*
	 * Per node, the node holding the same vector that comes first in the
	 * visiting order (the node itself when it is the first): a later copy's
	 * visit takes that node's list instead of searching (see
	 * gateann_graph_visit).  Set by gateann_graph_init when not NULL.
	 */
	uint32	   *twin;			/* n, or NULL: every visit searches */
	int			r_max;			/* each list's first r_max: the tunneling prefix */
	slock_t    *locks;			/* n, or NULL when one process builds */

	/*
	 * A partition of a build in partitions (build_merge.c): its members whose
	 * bit is set here belong to another partition, which decides how they
	 * are reached and their lists' prefixes; this one's lists add them edges
	 * into it.  The repair neither links them nor walks through them; the
	 * medoid is the caller's first entry point, one of the whole index's.
	 * NULL: a whole graph.
	 */
	const uint8 *foreign;		/* n bits, or NULL */
	uint32		medoid;
	/*
	 * Entry points: the medoid first, then the nodes nearest the centroids
	 * of the index's k-means groups.  Every search starts from the ones
	 * nearest its target.
	 */
	int			nentries;
	uint32		entries[GATEANN_MAX_ENTRIES];
} GateannGraph;

typedef struct GateannGraphScratch GateannGraphScratch;

/* A flag while the build maps the entry points' ids (never a node id) */
#define GATEANN_ENTRY_RENUMBERED	0x80000000

/* Neighbor slots per node while building: R plus slack. */
extern int	gateann_graph_capacity(int R);

/* Bytes of the arrays (adj, degree, order, twin) for n nodes. */
extern Size gateann_graph_array_bytes(uint32 n, int R);

/*
 * Set up a graph whose adj, degree, order (twin and locks, if not NULL)
 * point at allocated memory: empty lists, a deterministic random visiting
 * order, each node's twin, the medoid as first entry point, followed by the
 * nentries given ones (node ids, invalid ones and the medoid skipped).
 */
extern void gateann_graph_init(GateannGraph *graph, const uint32 *entries, int nentries);

/*
 * Fill codes (n * dims), low and step (dims each) with an 8-bit copy of
 * graph->vectors, one code step per dimension spanning its range, and point
 * the graph at them.
 */
extern void gateann_graph_quantize(GateannGraph *graph, uint8 *codes, float *low, float *step);

/* Per-process search scratch (palloc'd in the current context). */
extern GateannGraphScratch *gateann_graph_scratch_create(const GateannGraph *graph, int L);

/*
 * One Vamana step for node p: search, robust prune, reverse edges.  A copy
 * of a vector visited before (graph->twin) takes that node and its list as
 * its own list instead, and that node an edge to it.
 */
extern void gateann_graph_visit(GateannGraph *graph, GateannGraphScratch *scratch,
								uint32 p, int L, float alpha);

/*
 * How many times this process's visits pruned a neighbor list that another
 * process changed before the prune was put in (redone on the new list)
 */
extern uint64 gateann_graph_prunes_redone(const GateannGraphScratch *scratch);

/*
 * Prune the lists of nodes from..to-1 that grew past R into their slack,
 * and order each so that its first r_max neighbors (at most R: the in-memory
 * neighbor store's share) are a navigable subset.  A node's step reads the vectors
 * and changes only its own list: processes may finish disjoint ranges at
 * once.
 */
extern void gateann_graph_finish(GateannGraph *graph, GateannGraphScratch *scratch,
								 float alpha, int r_max, uint32 from, uint32 to);

/*
 * Make every node reachable from the entry points over the first r_max
 * neighbors of each list (all that tunneling follows): a node no walk
 * reaches gets an edge, within that part of the list, from the two nearest
 * reached nodes a search for it expands that can take one without taking
 * anyone's way in (reach.c: gateann_reach_repair; single process).
 * Returns how many nodes were linked.
 */
extern uint32 gateann_graph_connect(GateannGraph *graph, GateannGraphScratch *scratch,
									int L, int r_max);

/*
 * After the passes and gateann_graph_finish over every node: connect with
 * r_max, then set graph->r_max to r_max, or when choose_r_max to R if
 * tunneling over that prefix of each list finds clearly less than tunneling
 * over whole lists (a probe of the graph's own nodes).  The graph does not
 * depend on the choice (single process).
 */
extern void gateann_graph_complete(GateannGraph *graph, GateannGraphScratch *scratch,
								   int L, float alpha, int r_max, bool choose_r_max);

/*
 * A stretch of the build's visits: order[from..to) with this list and alpha.
 * Zeroed, the start of a build; gateann_graph_next_step moves it on.
 */
typedef struct GateannGraphStep
{
	int			stage;			/* where the plan is (graph.c) */
	int			pass;			/* 1, 2 or 3: what progress reports */
	float		alpha;
	int			L;
	uint32		from;
	uint32		to;
} GateannGraphStep;

/*
 * The next stretch of visits of a build with list L and alpha, or false when
 * the graph needs no more: one pass at alpha with half the list when probes
 * after its first quarter and at its end say it is enough, else two passes
 * (alpha 1, then alpha, with the whole list) over emptied lists (graph.c).
 * Probes the graph and may empty its lists: call it with no other process
 * visiting.
 */
extern bool gateann_graph_next_step(GateannGraph *graph, GateannGraphStep *step, int L,
									float alpha);

/*
 * Serial build: the passes gateann_graph_next_step gives, then
 * gateann_graph_finish and gateann_graph_complete.  Allocates adj/degree/order; entries as
 * gateann_graph_init.  progress(pass, done, total) is called every few
 * hundred nodes (it may CHECK_FOR_INTERRUPTS).
 */
extern void gateann_graph_build(GateannGraph *graph, const uint32 *entries, int nentries,
								int L, float alpha, int r_max, bool choose_r_max,
								void (*progress) (int pass, uint32 done, uint32 total));

/* How many of its own nodes a build probe searches for, and for how many
 * nearest neighbors of each (recall@GATEANN_GRAPH_PROBE_K) */
#define GATEANN_GRAPH_PROBE_QUERIES	200
#define GATEANN_GRAPH_PROBE_K		10

/*
 * How well the finished graph answers unfiltered searches:
 * GATEANN_GRAPH_PROBE_QUERIES of its own nodes are searched for with exact
 * distances (each walked through but not counted: see probe_hits), a list
 * of lists[0], then lists[1], ... until one finds `enough` of their
 * GATEANN_GRAPH_PROBE_K nearest neighbors (against the exact answer).
 * recall[i] is what lists[i] found; returns how many lists were tried (0
 * when the graph has too few nodes to tell).  A scan, with PQ distances and
 * its strict_order rounds, finds about as much at that list size, a little
 * more.
 */
extern int	gateann_graph_probe_recall(const GateannGraph *graph, const int *lists,
									   int nlists, double enough, double *recall);

/*
 * Robust prune (alpha, at most R) of ncands candidates for the node whose
 * vector is `self`, candidates' vectors given in order (ncands * dims), the
 * result ordered for tunneling (first r_max a prune at alpha 1), written as
 * cand_ids into out (room for R).  Returns its length.  Candidates must be
 * distinct and not the node itself.
 */
extern int	gateann_graph_prune_vectors(const float *self, const float *cand_vectors,
										const uint32 *cand_ids, int ncands, int dims,
										float alpha, int R, int r_max, uint32 *out);

#endif							/* GATEANN_GRAPH_H */
