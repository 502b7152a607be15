/*
 * reach.h — reachability over prefixes: the walk, a link into a prefix, and
 * the one repair that build and VACUUM run (reach.c).
 *
 * A tunneling search follows only the first prefix_len entries of the
 * lists of the nodes it passes (the neighbor store's rows), so every node
 * must be reachable from the entry points over prefixes.  Plain C like
 * search.h: no PostgreSQL headers, no allocation; the graph is read and
 * written through callbacks so the same code serves the build's in-memory
 * adjacency and VACUUM's records and store.
 */
#ifndef GATEANN_REACH_H
#define GATEANN_REACH_H

#include "search.h"

/* parent[] of a root, or of a node no walk has reached */
#define GATEANN_NO_PARENT ((uint32_t) 0xFFFFFFFF)

/*
 * Breadth-first walk from `from` over the edges `neighbors` gives (at most
 * max_degree per node), marking every node reached in the bitmap `reached`
 * (one bit per id below nnodes, set bits are not walked again).  queue:
 * room for nnodes ids; row: room for max_degree ids.  Ids at or beyond
 * nnodes are ignored.  A node the callback refuses is marked too (so it is
 * asked about once) but not walked from: callers read the bits of nodes
 * only.  parent (may be NULL): for each node newly marked, the node whose
 * list led to it, so the walk leaves a spanning tree of what it reached.
 * Returns how many nodes it newly reached that were not refused.
 */
extern uint32_t gateann_reach(uint32_t nnodes, uint32_t from, GateannNeighborsFn neighbors,
							  void *arg, int max_degree, uint8_t *reached, uint32_t *parent,
							  uint32_t *queue, uint32_t *row);

/*
 * gateann_reach from each of roots[0..nroots) in turn, into the same
 * bitmap (and tree); returns how many nodes they reached together.
 */
extern uint32_t gateann_reach_roots(uint32_t nnodes, const uint32_t *roots, int nroots,
									GateannNeighborsFn neighbors, void *arg, int max_degree,
									uint8_t *reached, uint32_t *parent, uint32_t *queue,
									uint32_t *row);

/*
 * Put `to` among the first prefix_len entries of from's list[0..n) (the
 * part of a neighbor list that tunneling follows) and write the new list to
 * out (room for max_n + 1 ids); returns its length, at most max_n.  An
 * entry already in the prefix: nothing changes (returns -1, out untouched).
 * An entry past the prefix is moved in.  If the prefix is full, one of its
 * entries leaves it for the place just behind it: the last one that is not
 * an edge of the walk's spanning tree (parent[id] != from, ids below
 * parent_len), so no node loses its way in; with parent NULL, or when every
 * entry is a tree edge, the last one.  A full list loses its last entry.
 */
extern int	gateann_prefix_link(const uint32_t *list, int n, int max_n, uint32_t to,
								int prefix_len, uint32_t from, const uint32_t *parent,
								uint32_t parent_len, uint32_t *out);

/*
 * Make every node that needs it reachable from the roots over prefixes.
 *
 * One walk from the roots leaves a spanning tree (parent[]).  Each node it
 * missed is linked from reached nodes near it whose prefix can take an
 * entry without losing a tree edge (a prefix with room, or an entry that is
 * not a tree edge: the link pushes that one out), and the walk goes on from
 * it.  No tree edge is ever removed, so what is reached stays reached and
 * one pass suffices; such a node always exists (a leaf of the tree has no
 * tree edges at all), found by a scan when none is near.
 *
 * Two in-edges where two near nodes can take one (one alone is easily
 * pruned away by a later insert), from lists with room in preference.
 */
typedef struct GateannReachRepair
{
	uint32_t	nnodes;
	const uint32_t *roots;
	int			nroots;
	int			prefix_len;		/* entries of a list a walk follows */
	GateannNeighborsFn prefix;	/* a node's prefix: at most prefix_len ids */

	/*
	 * Nodes near id, nearest first, at most max, reached or not (the
	 * repair picks the reached ones); negative: id needs no link (not a
	 * live node).
	 */
	int			(*near) (void *arg, uint32_t id, const uint8_t *reached, uint32_t *out,
						 int max);

	/*
	 * Can a link be added to from's list (a live node), and, when
	 * need_room, has the whole list room for one more entry (else the link
	 * pushes its last entry out of it)?
	 */
	int			(*can_link) (void *arg, uint32_t from, int need_room);

	/*
	 * Put `to` into from's prefix: gateann_prefix_link with (from, parent,
	 * parent_len) on from's list, then write it where prefix() reads it.
	 */
	void		(*link) (void *arg, uint32_t from, uint32_t to, const uint32_t *parent,
						 uint32_t parent_len);

	/*
	 * Asked before each link and every 1,024 nodes of a walk over the ids
	 * (CHECK_FOR_INTERRUPTS, vacuum_delay_point): 0 stops the repair.
	 */
	int			(*go_on) (void *arg);
	void	   *arg;

	/* buffers: reached (nnodes bits), parent and queue (nnodes ids each),
	 * row (prefix_len + 1 ids), candidates (max_candidates ids) */
	uint8_t    *reached;
	uint32_t   *parent;
	uint32_t   *queue;
	uint32_t   *row;
	uint32_t   *candidates;
	int			max_candidates;

	/* results */
	uint32_t	linked;			/* nodes linked */
	uint32_t	links;			/* calls of link() */
	uint32_t	left;			/* nodes that needed a link and got none */
} GateannReachRepair;

/*
 * Run the repair; returns 0 when go_on stopped it, else 1 (rr->left is 0
 * unless no reached node could take a link at all).  On return reached and
 * parent describe the walk with every link made.
 */
extern int	gateann_reach_repair(GateannReachRepair *rr);

#endif							/* GATEANN_REACH_H */
