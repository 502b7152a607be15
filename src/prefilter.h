/*
 * prefilter.h — speculative pre-filtering (as PipeANN-Filter does it):
 * for a filter so selective that walking the graph toward the query would
 * tunnel through thousands of non-matching nodes (or never reach matching
 * ones at all, when they lie in another part of the graph), scan the
 * in-memory filter store for every node that may match, rank those by PQ
 * distance, and read only the best of them for exact re-ranking and exact
 * filter verification.
 *
 * This module only chooses and orders candidates from the stores; scan.c
 * reads and verifies them like any other candidates.
 */
#ifndef GATEANN_PREFILTER_H
#define GATEANN_PREFILTER_H

#include "filter.h"
#include "store.h"
#include "topk.h"

/* Nodes the estimate of a filter's selectivity checks at most */
#define GATEANN_PREFILTER_SAMPLE	1000
/* ... and passing ones it stops at (a common filter is known to be common soon) */
#define GATEANN_PREFILTER_SAMPLE_PASS	32

/*
 * A graph search whose first round read (passed the filter store) under
 * 1/GATEANN_GRAPH_MISS_FACTOR of the share of nodes the filter matches
 * overall switches to pre-filtering, if the filter matches at most
 * GATEANN_PREFILTER_COST_RATIO times the nodes a walk would cross at that
 * rate to read L matching ones (scan.c).
 */
#define GATEANN_GRAPH_MISS_FACTOR	4
/* ... once that round walked enough nodes to expect this many matching */
#define GATEANN_GRAPH_MISS_EVIDENCE	20
#define GATEANN_PREFILTER_COST_RATIO	100

/* A candidate: node id and PQ distance */
typedef GateannScored GateannPrefilterCand;

typedef struct GateannPrefilter
{
	GateannPrefilterCand *cands;	/* every node that may match */
	int64		ncands;
	int64		allocated;
	int64		taken;			/* cands[0..taken-1] were handed out, in order */
} GateannPrefilter;

/*
 * The fraction of the live nodes among ids 0..nnodes-1 that pass the
 * in-memory check, from up to nsample ids drawn at random (with a fixed
 * seed, so a query's estimate is repeatable); sampling stops after max_pass
 * passing ones (the relative error is then about 1 / sqrt(max_pass)).
 */
extern double gateann_prefilter_estimate(const GateannFilter *filter,
										 const GateannStore *store, uint32 nnodes,
										 int nsample, int max_pass);

/*
 * Collect every present, not deleted node passing the in-memory check with
 * its PQ distance (table: gateann_pq_distance_table of the query), in the
 * current memory context.
 */
extern void gateann_prefilter_collect(GateannPrefilter *pf, const GateannFilter *filter,
									  const GateannStore *store, const float *table);

/* Start an empty candidate set (a memory walk's pool, scan.c), in the current memory context */
extern void gateann_prefilter_init(GateannPrefilter *pf);

/* Add one candidate */
static inline void
gateann_prefilter_add(GateannPrefilter *pf, uint32 id, float dist)
{
	if (pf->ncands >= pf->allocated)
	{
		pf->allocated *= 2;
		pf->cands = repalloc_huge(pf->cands, sizeof(GateannPrefilterCand) * pf->allocated);
	}
	pf->cands[pf->ncands].id = id;
	pf->cands[pf->ncands].dist = dist;
	pf->ncands++;
}

/* How many candidates not handed out yet are closer than dist */
extern int64 gateann_prefilter_count_below(const GateannPrefilter *pf, float dist);

/* The smallest PQ distance among the candidates not handed out yet (+inf: none) */
extern float gateann_prefilter_next_dist(const GateannPrefilter *pf);

/*
 * Hand out the next `count` candidates in ascending PQ distance (ties by
 * id), with at most max_copies of any one distance: they are placed, sorted,
 * at cands[taken..]; *batch points at them.  Returns how many there were (0
 * when all were handed out; fewer than count when a long run of equal
 * distances held more back than the batch could replace).
 *
 * Why the cap: copies of a vector have one PQ code, so they share a
 * distance, and a table that stores each vector many times would otherwise
 * spend a batch on a few vectors.  Those few are all the scan learns about
 * how far PQ distances stray from exact ones (scan.c, unreached_bound), and
 * a vector whose code strays more, further down the list, was never read.
 * The candidates held back stay, and come first in a later batch if they
 * are still the best.
 */
extern int	gateann_prefilter_take(GateannPrefilter *pf, int count, int max_copies,
								   const GateannPrefilterCand **batch);

#endif							/* GATEANN_PREFILTER_H */
