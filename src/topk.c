/*
 * topk.c — see topk.h.
 *
 * A quickselect (median of three) puts the k smallest first, then only
 * those k are sorted: a pre-filter pass may have tens of thousands of
 * candidates of which a scan reads the best L.
 */
#include "topk.h"

#include <stdbool.h>
#include <stdlib.h>

static inline bool
scored_less(const GateannScored *a, const GateannScored *b)
{
	if (a->dist != b->dist)
		return a->dist < b->dist;
	return a->id < b->id;
}

static int
scored_cmp(const void *a, const void *b)
{
	const GateannScored *x = a;
	const GateannScored *y = b;

	if (scored_less(x, y))
		return -1;
	if (scored_less(y, x))
		return 1;
	return 0;
}

static inline void
scored_swap(GateannScored *a, GateannScored *b)
{
	GateannScored t = *a;

	*a = *b;
	*b = t;
}

/* c[0..k-1] become the k smallest of c[0..n-1], in no order (0 < k < n) */
static void
select_smallest(GateannScored *c, int64_t n, int64_t k)
{
	int64_t		lo = 0,
				hi = n - 1;

	while (hi > lo)
	{
		int64_t		mid = lo + (hi - lo) / 2;
		GateannScored pivot;
		int64_t		i,
					store;

		/* median of c[lo], c[mid], c[hi] moved to c[hi] as the pivot */
		if (scored_less(&c[mid], &c[lo]))
			scored_swap(&c[mid], &c[lo]);
		if (scored_less(&c[hi], &c[lo]))
			scored_swap(&c[hi], &c[lo]);
		if (scored_less(&c[mid], &c[hi]))
			scored_swap(&c[mid], &c[hi]);
		pivot = c[hi];
		store = lo;
		for (i = lo; i < hi; i++)
		{
			if (scored_less(&c[i], &pivot))
			{
				scored_swap(&c[i], &c[store]);
				store++;
			}
		}
		scored_swap(&c[store], &c[hi]);

		/*
		 * Now c[lo..store-1] < c[store] <= c[store+1..hi], and everything
		 * before lo is smaller still: done once the k-th smallest is placed
		 * or the first k are exactly those below the pivot.
		 */
		if (store == k - 1 || store == k)
			return;
		if (store > k)
			hi = store - 1;
		else
			lo = store + 1;
	}
}

int64_t
gateann_topk_sorted(GateannScored *c, int64_t n, int64_t k)
{
	if (k <= 0 || n <= 0)
		return 0;
	if (k < n)
		select_smallest(c, n, k);
	else
		k = n;
	qsort(c, (size_t) k, sizeof(GateannScored), scored_cmp);
	return k;
}
