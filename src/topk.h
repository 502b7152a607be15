/*
 * topk.h — the k best of n scored ids, in order (prefilter.c hands out
 * pre-filtered candidates this way).  Plain C, no PostgreSQL headers,
 * unit-tested.
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

#endif							/* GATEANN_TOPK_H */
