/*
 * search.c — graph walks (search.h).
 */
#include "search.h"

#include <string.h>

int
gateann_candidate_insert(GateannCandidate *list, int *size, int L, uint32_t id, float dist)
{
	int			lo = 0,
				hi = *size;

	if (L < 1 || gateann_candidate_rejects(list, *size, L, dist))
		return -1;
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (list[mid].dist <= dist)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (*size < L)
		(*size)++;
	memmove(&list[lo + 1], &list[lo], sizeof(GateannCandidate) * (*size - 1 - lo));
	list[lo].id = id;
	list[lo].dist = dist;
	list[lo].expanded = 0;
	list[lo].may_match = 0;
	return lo;
}

int
gateann_candidate_merge(GateannCandidate *list, int *size, int L,
						const GateannCandidate *batch, int nb, GateannDropFn drop, void *arg)
{
	int			total = *size + nb;
	int			keep = total < L ? total : L;
	int			i = *size - 1;
	int			j = nb - 1;
	int			w;
	int			left;

	/* what ranks beyond the list falls off, worst first */
	for (left = total - keep; left > 0; left--)
	{
		/* on equal distance the new entry ranks after the old one */
		if (j >= 0 && (i < 0 || batch[j].dist >= list[i].dist))
		{
			if (drop)
				drop(arg, batch[j].id, batch[j].dist);
			j--;
		}
		else
		{
			/* an expanded entry has already given what it had */
			if (drop && !list[i].expanded)
				drop(arg, list[i].id, list[i].dist);
			i--;
		}
	}
	/*
	 * From the back: each new entry goes behind the old ones of at most its
	 * distance, so the old entries beyond it move up as one block (a long
	 * list's tail moves once per batch, by memmove, not entry by entry).
	 */
	w = keep - 1;
	while (j >= 0)
	{
		int			lo = 0,
					hi = i + 1,
					step = 1,
					run;

		/*
		 * Galloping back from i bounds the search to the entries that
		 * move: new entries of one batch land close to each other.
		 */
		while (hi - step > 0 && list[hi - step].dist > batch[j].dist)
		{
			hi -= step;
			step *= 2;
		}
		lo = hi - step > 0 ? hi - step : 0;
		while (lo < hi)
		{
			int			mid = (lo + hi) / 2;

			if (list[mid].dist <= batch[j].dist)
				lo = mid + 1;
			else
				hi = mid;
		}
		run = i + 1 - lo;
		if (run > 0)
		{
			memmove(&list[w - run + 1], &list[lo], sizeof(GateannCandidate) * run);
			w -= run;
			i = lo - 1;
		}
		list[w--] = batch[j--];
	}
	*size = keep;
	/* w + 1 is where the best new entry went, if any was kept */
	return w + 1 < keep ? w + 1 : -1;
}

/*
 * An expansion's neighbors go into the list as one sorted batch: inserting
 * them one by one moved the list's tail once per neighbor (a build's
 * searches spent a quarter of their time in those moves at L = 128).  The
 * list comes out the same.
 */
#define BEST_FIRST_BATCH	128

static int
merge_expansion(GateannCandidate *list, int *size, int L, const uint32_t *ids,
				const float *dists, int n)
{
	GateannCandidate batch[BEST_FIRST_BATCH];
	int			nb = 0,
				i;

	for (i = 0; i < n; i++)
	{
		int			j;

		/* what a full list would turn away now, it turns away after the merge */
		if (L < 1 || gateann_candidate_rejects(list, *size, L, dists[i]))
			continue;
		/* insertion sort, behind equal distances: arrival order kept */
		for (j = nb; j > 0 && batch[j - 1].dist > dists[i]; j--)
			batch[j] = batch[j - 1];
		batch[j].id = ids[i];
		batch[j].dist = dists[i];
		batch[j].expanded = 0;
		batch[j].may_match = 0;
		nb++;
	}
	if (nb == 0)
		return -1;
	return gateann_candidate_merge(list, size, L, batch, nb, NULL, NULL);
}

int
gateann_best_first(GateannCandidate *list, int size, int L, int max_expand,
				   GateannExpandFn expand, GateannPrefetchFn prefetch, void *arg,
				   uint32_t *ids, float *dists)
{
	int			first = 0;		/* no unexpanded candidate before this */
	int			nexp = 0;

	while (max_expand < 0 || nexp < max_expand)
	{
		int			n,
					i;

		while (first < size && list[first].expanded)
			first++;
		if (first >= size)
			break;
		list[first].expanded = 1;
		nexp++;
		if (prefetch)
		{
			int			next = first + 1;

			while (next < size && list[next].expanded)
				next++;
			if (next < size)
				prefetch(arg, list[next].id);
		}
		n = expand(arg, list[first].id, list[first].dist, ids, dists);
		for (i = 0; i < n; i += BEST_FIRST_BATCH)
		{
			int			pos = merge_expansion(list, &size, L, ids + i, dists + i,
											  n - i < BEST_FIRST_BATCH ? n - i : BEST_FIRST_BATCH);

			/* an insertion before the scan point moves it back */
			if (pos >= 0 && pos < first)
				first = pos;
		}
	}
	return size;
}

