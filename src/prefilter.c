/*
 * prefilter.c — candidates for speculative pre-filtering (prefilter.h).
 *
 * The filter store holds a byte (or 64 Bloom bits) per node and column, so
 * checking every node is a sequential pass over a few MB, and only the
 * nodes that pass get a PQ distance.  The in-memory check has no false
 * negatives, so the candidate set is a superset of the matching nodes; the
 * exact check on the fetched records removes the rest (scan.c).
 */
#include "postgres.h"

#include "distance.h"
#include "prefilter.h"

#include "common/pg_prng.h"
#include "miscadmin.h"
#include "utils/float.h"

/* Nodes checked per call of gateann_filter_store_select */
#define PREFILTER_CHUNK		4096
/* Candidates ahead whose PQ codes are prefetched */
#define PREFILTER_PREFETCH	16

/*
 * Passes over the candidates a batch makes at most to replace those its cap
 * on equal PQ distances passed over (gateann_prefilter_take): a long run of
 * copies of one vector costs that many, not one per copy.
 */
#define PREFILTER_PASSES	4

static inline bool
store_live(const GateannStore *store, uint32 id)
{
	return gateann_store_has(store, id) && !gateann_store_is_deleted(store, id);
}

double
gateann_prefilter_estimate(const GateannFilter *filter, const GateannStore *store,
						   uint32 nnodes, int nsample, int max_pass)
{
	pg_prng_state rng;
	int			i;
	int			live = 0;
	int			pass = 0;

	nnodes = Min(nnodes, store->capacity);
	if (nnodes == 0)
		return 1.0;

	/*
	 * Random ids, not every k-th: node ids follow the heap's order, and
	 * periodic data would alias with a fixed stride.  A fixed seed keeps
	 * the choice of a query repeatable.
	 */
	pg_prng_seed(&rng, UINT64CONST(0x9e3779b97f4a7c15));
	for (i = 0; i < nsample; i++)
	{
		uint32		id = (uint32) pg_prng_uint64_range(&rng, 0, nnodes - 1);

		if (!store_live(store, id))
			continue;
		live++;
		if (gateann_filter_store_pass(filter, (const uint8 *const *) store->filter_cols, id) &&
			++pass >= max_pass)
			break;				/* precise enough: a common filter */
	}
	return live > 0 ? (double) pass / live : 1.0;
}

void
gateann_prefilter_init(GateannPrefilter *pf)
{
	pf->allocated = 1024;
	pf->cands = palloc(sizeof(GateannPrefilterCand) * pf->allocated);
	pf->ncands = 0;
	pf->taken = 0;
}

int64
gateann_prefilter_count_below(const GateannPrefilter *pf, float dist)
{
	int64		n = 0;
	int64		c;

	for (c = pf->taken; c < pf->ncands; c++)
		n += pf->cands[c].dist < dist;
	return n;
}

float
gateann_prefilter_next_dist(const GateannPrefilter *pf)
{
	float		best = get_float4_infinity();
	int64		c;

	/* (the ones not handed out yet are in no order) */
	for (c = pf->taken; c < pf->ncands; c++)
		best = Min(best, pf->cands[c].dist);
	return best;
}

void
gateann_prefilter_collect(GateannPrefilter *pf, const GateannFilter *filter,
						  const GateannStore *store, const float *table)
{
	uint32		capacity = store->capacity;
	int			m = store->pq_subspaces;
	uint32	   *ids = palloc(sizeof(uint32) * PREFILTER_CHUNK);
	uint32		lo;

	gateann_prefilter_init(pf);
	for (lo = 0; lo < capacity; lo += Min(PREFILTER_CHUNK, capacity - lo))
	{
		uint32		hi = lo + Min(PREFILTER_CHUNK, capacity - lo);
		int			n = gateann_filter_store_select(filter,
													(const uint8 *const *) store->filter_cols,
													lo, hi, ids);
		int			i;

		if (pf->ncands + n > pf->allocated)
		{
			pf->allocated = Max(pf->allocated * 2, pf->ncands + n);
			pf->cands = repalloc_huge(pf->cands,
									  sizeof(GateannPrefilterCand) * pf->allocated);
		}
		/*
		 * Matching nodes are scattered over an N * M-byte array: prefetch
		 * codes a few candidates ahead so that the cache misses overlap.
		 */
		for (i = 0; i < Min(n, PREFILTER_PREFETCH); i++)
			gateann_store_prefetch_code(store, ids[i]);
		for (i = 0; i < n; i++)
		{
			uint32		id = ids[i];
			GateannPrefilterCand *c;

			if (i + PREFILTER_PREFETCH < n)
				gateann_store_prefetch_code(store, ids[i + PREFILTER_PREFETCH]);
			if (!store_live(store, id))
				continue;
			c = &pf->cands[pf->ncands++];
			c->id = id;
			c->dist = gateann_pq_code_distance(table, gateann_store_code(store, id), m);
		}
		CHECK_FOR_INTERRUPTS();
	}
	pfree(ids);
}

int
gateann_prefilter_take(GateannPrefilter *pf, int count, int max_copies,
					   const GateannPrefilterCand **batch)
{
	GateannScored *first = pf->cands + pf->taken;
	GateannScored *scratch;
	int			n;

	*batch = first;
	if (count <= 0 || pf->taken >= pf->ncands)
		return 0;
	scratch = palloc(sizeof(GateannScored) * count);
	n = (int) gateann_topk_sorted_capped(first, pf->ncands - pf->taken, count,
										 max_copies, PREFILTER_PASSES, scratch);
	pfree(scratch);
	pf->taken += n;
	return n;
}
