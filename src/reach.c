/*
 * reach.c — reachability over prefixes (reach.h).
 */
#include "reach.h"

#include <string.h>

uint32_t
gateann_reach(uint32_t nnodes, uint32_t from, GateannNeighborsFn neighbors, void *arg,
			  int max_degree, uint8_t *reached, uint32_t *parent, uint32_t *queue,
			  uint32_t *row)
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
			continue;			/* not a node a walk may pass (GateannNeighborsFn) */
		marked++;
		for (i = 0; i < n; i++)
		{
			uint32_t	nb = row[i];

			if (nb >= nnodes || gateann_visit(reached, nb))
				continue;
			if (parent != NULL)
				parent[nb] = id;
			queue[tail++] = nb;
		}
	}
	return marked;
}

uint32_t
gateann_reach_roots(uint32_t nnodes, const uint32_t *roots, int nroots,
					GateannNeighborsFn neighbors, void *arg, int max_degree, uint8_t *reached,
					uint32_t *parent, uint32_t *queue, uint32_t *row)
{
	uint32_t	n = 0;
	int			e;

	for (e = 0; e < nroots; e++)
		n += gateann_reach(nnodes, roots[e], neighbors, arg, max_degree, reached, parent,
						   queue, row);
	return n;
}

/* Is list entry id the spanning tree's edge from -> id */
static inline int
is_tree_edge(uint32_t from, uint32_t id, const uint32_t *parent, uint32_t parent_len)
{
	return parent != NULL && id < parent_len && parent[id] == from;
}

int
gateann_prefix_link(const uint32_t *list, int n, int max_n, uint32_t to, int prefix_len,
					uint32_t from, const uint32_t *parent, uint32_t parent_len, uint32_t *out)
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
		/* the prefix is full: the last entry that is no tree edge leaves it */
		for (victim = prefix_len - 1; victim >= 0; victim--)
			if (!is_tree_edge(from, list[victim], parent, parent_len))
				break;
		if (victim < 0)
			victim = prefix_len - 1;
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
	return k < max_n ? k : max_n;
}

/*
 * Can from's prefix take `to` without losing a tree edge: it has room, or
 * an entry that is no tree edge (which the link pushes out), or holds `to`
 * already.
 */
static int
prefix_can_take(GateannReachRepair *rr, uint32_t from)
{
	int			n = rr->prefix(rr->arg, from, rr->row, rr->prefix_len);
	int			i;

	if (n < 0)
		return 0;
	if (n < rr->prefix_len)
		return 1;
	for (i = 0; i < n; i++)
		if (!is_tree_edge(from, rr->row[i], rr->parent, rr->nnodes))
			return 1;
	return 0;
}

/* A reached node able to take a link; rule 0 wants its whole list to have room */
static int
may_link_from(GateannReachRepair *rr, uint32_t from, int rule)
{
	if (from >= rr->nnodes || !gateann_reached(rr->reached, from))
		return 0;
	/* the prefix first: in memory, where can_link may read a page */
	return prefix_can_take(rr, from) && rr->can_link(rr->arg, from, rule == 0);
}

/* The walk from the roots, with its spanning tree */
static void
walk_from_roots(GateannReachRepair *rr)
{
	memset(rr->reached, 0, ((size_t) rr->nnodes + 7) / 8);
	memset(rr->parent, 0xFF, sizeof(uint32_t) * (size_t) rr->nnodes);
	(void) gateann_reach_roots(rr->nnodes, rr->roots, rr->nroots, rr->prefix, rr->arg,
							   rr->prefix_len, rr->reached, rr->parent, rr->queue, rr->row);
}

/* find_source's answer when go_on stopped the repair */
#define REPAIR_STOPPED ((uint32_t) 0xFFFFFFFE)

/* A reached node that can be linked from; with tree_safe, without losing a tree edge */
static int
can_source(GateannReachRepair *rr, uint32_t from, int tree_safe)
{
	if (tree_safe)
		return may_link_from(rr, from, 1);
	return from < rr->nnodes && gateann_reached(rr->reached, from) &&
		rr->can_link(rr->arg, from, 0);
}

/*
 * The first of candidates[0..ncandidates) that can_source accepts, else any
 * node it accepts, looking from *cursor on (where the last look ended:
 * nodes before it had none then); GATEANN_NO_PARENT if none.
 */
static uint32_t
find_source(GateannReachRepair *rr, int ncandidates, int tree_safe, uint32_t *cursor)
{
	uint32_t	k;
	int			i;

	for (i = 0; i < ncandidates; i++)
		if (can_source(rr, rr->candidates[i], tree_safe))
			return rr->candidates[i];
	for (k = 0; k < rr->nnodes; k++)
	{
		uint32_t	from = (*cursor + k) % rr->nnodes;

		if ((k & 1023) == 1023 && !rr->go_on(rr->arg))
			return REPAIR_STOPPED;
		if (can_source(rr, from, tree_safe))
		{
			*cursor = from;
			return from;
		}
	}
	return GATEANN_NO_PARENT;
}

/*
 * from's prefix is full of tree edges: u takes the place of the last, v,
 * which goes into u's prefix.  u is not reached, so no entry of its prefix
 * is a tree edge and whatever leaves it loses nobody a way in; v and what
 * hangs below it are now reached through u.
 */
static void
splice(GateannReachRepair *rr, uint32_t from, uint32_t u)
{
	int			n = rr->prefix(rr->arg, from, rr->row, rr->prefix_len);
	uint32_t	v;

	if (n <= 0)
	{
		rr->link(rr->arg, from, u, rr->parent, rr->nnodes);
		return;
	}
	v = rr->row[n - 1];
	rr->link(rr->arg, from, u, rr->parent, rr->nnodes);
	rr->parent[u] = from;
	rr->link(rr->arg, u, v, rr->parent, rr->nnodes);
	if (v < rr->nnodes)
		rr->parent[v] = u;
}

int
gateann_reach_repair(GateannReachRepair *rr)
{
	uint32_t	cursor = 0;
	uint32_t	u;

	rr->linked = rr->links = rr->left = 0;
	walk_from_roots(rr);
	for (u = 0; u < rr->nnodes; u++)
	{
		int			n,
					i,
					rule,
					links = 0;
		uint32_t	first = GATEANN_NO_PARENT;

		if ((u & 1023) == 0 && !rr->go_on(rr->arg))
			return 0;
		if (gateann_reached(rr->reached, u))
			continue;
		n = rr->near(rr->arg, u, rr->reached, rr->candidates, rr->max_candidates);
		if (n < 0)
			continue;
		if (!rr->go_on(rr->arg))
			return 0;
		for (rule = 0; rule < 2 && links == 0; rule++)
			for (i = 0; i < n && links < 2; i++)
			{
				uint32_t	from = rr->candidates[i];

				if (from == first || !may_link_from(rr, from, rule))
					continue;
				rr->link(rr->arg, from, u, rr->parent, rr->nnodes);
				if (links++ == 0)
					first = from;
			}
		if (links == 0)
		{
			/*
			 * None near can: any reached node that can (a long edge).
			 * Failing that, no reached node can take a link without losing
			 * a tree edge (the leaves of the tree cannot be linked from):
			 * splice u into a tree edge, from -> u -> v for from -> v, from
			 * the nearest reached node that can be linked from at all.
			 */
			uint32_t	from = find_source(rr, 0, 1, &cursor);
			int			splice_in = (from == GATEANN_NO_PARENT);

			if (splice_in)
				from = find_source(rr, n, 0, &cursor);
			if (from == REPAIR_STOPPED)
				return 0;
			if (from == GATEANN_NO_PARENT)
			{
				rr->left++;
				continue;
			}
			if (splice_in)
				splice(rr, from, u);
			else
				rr->link(rr->arg, from, u, rr->parent, rr->nnodes);
			links = splice_in ? 2 : 1;
			first = from;
		}
		rr->parent[u] = first;
		(void) gateann_reach(rr->nnodes, u, rr->prefix, rr->arg, rr->prefix_len,
							 rr->reached, rr->parent, rr->queue, rr->row);
		rr->linked++;
		rr->links += links;
	}
	return 1;
}
