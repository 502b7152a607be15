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

uint32_t
gateann_reach(uint32_t nnodes, uint32_t from, GateannNeighborsFn neighbors, void *arg,
			  int max_degree, uint8_t *reached, uint32_t *queue, uint32_t *row)
{
	uint32_t	head = 0,
				tail = 0,
				marked = 0;

	if (from >= nnodes || gateann_reached(reached, from))
		return 0;
	gateann_visit(reached, from);
	queue[tail++] = from;
	while (head < tail)
	{
		uint32_t	id = queue[head++];
		int			n = neighbors(arg, id, row, max_degree);
		int			i;

		if (n < 0)
			continue;			/* not a node a walk may pass (see search.h) */
		marked++;
		for (i = 0; i < n; i++)
		{
			uint32_t	nb = row[i];

			if (nb >= nnodes || gateann_visit(reached, nb))
				continue;
			queue[tail++] = nb;
		}
	}
	return marked;
}

int
gateann_prefix_link(const uint32_t *list, int n, int max_n, uint32_t to, int prefix_len,
					uint32_t *indeg, uint32_t indeg_len, uint32_t *out)
{
	int			at,
				victim = -1,
				k = 0,
				j;

	if (prefix_len < 1)
		prefix_len = 1;
	for (at = 0; at < n && list[at] != to; at++)
		;
	if (at < n && at < prefix_len)
		return -1;				/* in the prefix already */
	if (n >= prefix_len)
	{
		/* the prefix is full: choose who leaves it (ties: the later one) */
		victim = prefix_len - 1;
		if (indeg != NULL)
			for (j = prefix_len - 1; j >= 0; j--)
				if (list[j] < indeg_len && list[victim] < indeg_len &&
					indeg[list[j]] > indeg[list[victim]])
					victim = j;
	}
	for (j = 0; j < n && j < prefix_len; j++)
		if (j != victim)
			out[k++] = list[j];
	out[k++] = to;
	if (victim >= 0)
		out[k++] = list[victim];
	for (j = prefix_len; j < n; j++)
		if (list[j] != to)
			out[k++] = list[j];
	if (indeg != NULL)
	{
		if (to < indeg_len)
			indeg[to]++;
		if (victim >= 0 && list[victim] < indeg_len && indeg[list[victim]] > 0)
			indeg[list[victim]]--;
	}
	return k < max_n ? k : max_n;
}

int
gateann_prefix_has_spare(const uint32_t *prefix, int n, int prefix_len, const uint32_t *indeg,
						 uint32_t indeg_len)
{
	int			i;

	if (n < prefix_len)
		return 1;
	for (i = 0; i < n; i++)
		if (prefix[i] < indeg_len && indeg[prefix[i]] >= 2)
			return 1;
	return 0;
}
