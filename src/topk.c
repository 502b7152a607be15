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
#include <string.h>

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

/*
 * Keep the picks of sel[0..n-1] (sorted) that the cap on equal distances
 * allows, in order, at its front; move the others to the end of
 * c[0..*avail) and shorten *avail to end before them.  *last and *run carry
 * the run of equal distances taken so far over calls; `taken` says whether
 * there is one.  Returns how many were kept.
 */
static int64_t
keep_capped(GateannScored *c, int64_t taken, int64_t n, int64_t *avail, int max_run,
			float *last, int *run, GateannScored *passed)
{
	GateannScored *sel = c + taken;
	int64_t		rest = *avail - taken - n;	/* eligible ones after sel[n - 1] */
	int64_t		moved;
	int64_t		w = 0;
	int64_t		npassed = 0;
	int64_t		i;

	for (i = 0; i < n; i++)
	{
		if (taken + w > 0 && sel[i].dist == *last)
		{
			if (*run >= max_run)
			{
				passed[npassed++] = sel[i];
				continue;
			}
			(*run)++;
		}
		else
		{
			*last = sel[i].dist;
			*run = 1;
		}
		sel[w++] = sel[i];
	}
	if (npassed == 0)
		return w;
	/* fill the hole sel[w..n) from the end of the rest, then park them there */
	moved = npassed < rest ? npassed : rest;
	memmove(sel + w, c + *avail - moved, sizeof(GateannScored) * moved);
	memcpy(c + *avail - npassed, passed, sizeof(GateannScored) * npassed);
	*avail -= npassed;
	return w;
}

int64_t
gateann_topk_sorted_capped(GateannScored *c, int64_t n, int64_t k, int max_run,
						   int max_passes, GateannScored *scratch)
{
	int64_t		avail = n;
	int64_t		taken = 0;
	float		last = 0;
	int			run = 0;
	int			pass;

	if (k <= 0 || n <= 0)
		return 0;
	if (max_run < 1)
		max_run = 1;
	for (pass = 0; pass < max_passes && taken < k && avail > taken; pass++)
	{
		int64_t		got = gateann_topk_sorted(c + taken, avail - taken, k - taken);

		taken += keep_capped(c, taken, got, &avail, max_run, &last, &run, scratch);
	}
	return taken;
}
