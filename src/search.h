/*
 * search.h — graph walks shared by every module that needs one.
 *
 * Plain C (no PostgreSQL headers, no allocation), like pq.h: the callers
 * pass every buffer, and the graph is read through a callback, so the same
 * walk serves the build's in-memory adjacency, the in-memory neighbor store
 * and records read from pages.
 */
#ifndef GATEANN_SEARCH_H
#define GATEANN_SEARCH_H

#include <stddef.h>
#include <stdint.h>

/*
 * Neighbors of node id: writes at most `max` ids to out and returns how
 * many; a negative count means "not a node a walk may pass" (a free slot,
 * a node the source does not know).
 */
typedef int (*GateannNeighborsFn) (void *arg, uint32_t id, uint32_t *out, int max);

/*
 * Best-first search, the one walk of build, insert and VACUUM: a list of at
 * most L candidates in ascending distance (equal distances in arrival
 * order), expanded closest first.  The caller owns the graph, the distances
 * and the visited set; the walk owns the list.
 */
typedef struct GateannCandidate
{
	uint32_t	id;
	float		dist;
	uint16_t	expanded;
	uint16_t	may_match;		/* a filtered scan's in-memory check passed
								 * (scan.c's list window; 0 elsewhere) */
} GateannCandidate;

/*
 * Put (id, dist) into list[0..*size), sorted, at most L entries (behind
 * those of equal distance; the last one drops out of a full list).
 * Returns its position, or -1 when a full list holds only closer ones.
 */
extern int	gateann_candidate_insert(GateannCandidate *list, int *size, int L,
									 uint32_t id, float dist);

/* A full list whose last entry is at least as close has no room for dist */
static inline int
gateann_candidate_rejects(const GateannCandidate *list, int size, int L, float dist)
{
	return size >= L && dist >= list[L - 1].dist;
}

/*
 * Told of a candidate that leaves a list without having been expanded, so
 * that a walk that resumes later can take it up again.
 */
typedef void (*GateannDropFn) (void *arg, uint32_t id, float dist);

/*
 * Merge batch[0..nb) (sorted, equal distances in arrival order) into
 * list[0..*size), at most L entries: the list that inserting them one by one
 * with gateann_candidate_insert gives, in one backward pass instead of one
 * move of the tail per entry.  What falls off -- new entries, and old ones
 * not expanded yet -- goes to drop (may be NULL), worst first.  Returns the
 * position of the best new entry kept, or -1 when none was kept.
 */
extern int	gateann_candidate_merge(GateannCandidate *list, int *size, int L,
									const GateannCandidate *batch, int nb,
									GateannDropFn drop, void *arg);

/*
 * Expand node id (at distance dist): write the neighbors a walk has not met
 * yet to ids and their distances to dists (the callback keeps the visited
 * set and marks what it writes), and return how many (0 when none).
 */
typedef int (*GateannExpandFn) (void *arg, uint32_t id, float dist, uint32_t *ids,
								float *dists);

/*
 * Ask for what expanding node id will read to be fetched into the CPU's
 * cache (no effect on the result): the candidate expanded after the current
 * one, unless the current one's neighbors come before it.
 */
typedef void (*GateannPrefetchFn) (void *arg, uint32_t id);

/*
 * Expand the closest unexpanded candidate of list[0..size) and insert what
 * expand returns, until every candidate is expanded or max_expand were (a
 * negative max_expand: no limit).  Before each expansion, prefetch (if not
 * NULL) is given the next unexpanded candidate.  ids and dists: room for
 * the most neighbors one expansion returns.  The seeds in list must be
 * sorted (use gateann_candidate_insert) and marked visited by the caller.
 * Returns the list's final size.
 */
extern int	gateann_best_first(GateannCandidate *list, int size, int L, int max_expand,
							   GateannExpandFn expand, GateannPrefetchFn prefetch,
							   void *arg, uint32_t *ids, float *dists);

/*
 * Sets of node ids met by a walk: one bit per id.  gateann_visit marks id
 * and returns whether it was marked already.
 */
static inline int
gateann_reached(const uint8_t *reached, uint32_t id)
{
	return (reached[id >> 3] >> (id & 7)) & 1;
}

static inline int
gateann_visit(uint8_t *set, uint32_t id)
{
	uint8_t		bit = (uint8_t) (1 << (id & 7));

	if (set[id >> 3] & bit)
		return 1;
	set[id >> 3] |= bit;
	return 0;
}

#endif							/* GATEANN_SEARCH_H */
