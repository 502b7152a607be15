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

int
gateann_best_first(GateannCandidate *list, int size, int L, int max_expand,
				   GateannExpandFn expand, void *arg, uint32_t *ids, float *dists)
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
		n = expand(arg, list[first].id, list[first].dist, ids, dists);
		for (i = 0; i < n; i++)
		{
			int			pos = gateann_candidate_insert(list, &size, L, ids[i], dists[i]);

			/* an insertion before the scan point moves it back */
			if (pos >= 0 && pos < first)
				first = pos;
		}
	}
	return size;
}

