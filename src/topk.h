/*
 * topk.h — the k best of n scored ids, in order (prefilter.c hands out
 * pre-filtered candidates this way, with a cap on equal distances; scan.c
 * refills a list from the candidates it dropped).  Plain C, no PostgreSQL
 * headers, unit-tested.
 */
#ifndef GATEANN_TOPK_H
#define GATEANN_TOPK_H

#include <stdint.h>

typedef struct GateannScored
{
	float		dist;
	uint32_t	id;
} GateannScored;

/*
 * Reorder c[0..n-1] so that its min(k, n) smallest (by dist, then id) come
 * first, in ascending order; the rest follow in no order.  Expected
 * O(n + k log k).  Returns min(k, n) (0 when k <= 0).
 */
extern int64_t gateann_topk_sorted(GateannScored *c, int64_t n, int64_t k);

/*
 * As gateann_topk_sorted, with at most max_run items of any one distance:
 * c[0..r-1] holds, in ascending order, the first r items of c in (dist, id)
 * order, skipping every item whose distance max_run earlier picks already
 * have; the rest follow in no order.  Each pass over the candidates (at
 * most max_passes, each O(n)) replaces what the cap skipped, so a run of
 * equal distances much longer than k can leave r < k.  scratch: room for k
 * items.  Returns r.
 */
extern int64_t gateann_topk_sorted_capped(GateannScored *c, int64_t n, int64_t k,
										  int max_run, int max_passes,
										  GateannScored *scratch);

#endif							/* GATEANN_TOPK_H */
