/*
 * repair.h — which candidates a neighbor list repaired by VACUUM is pruned
 * from (vacuum.c).  Plain C, no PostgreSQL headers, unit-tested.
 *
 * A list that pointed to deleted nodes is rebuilt from the neighbors that
 * stay and replacements (the deleted nodes' neighbors).  There can be many
 * replacements (up to R per deleted neighbor), so the robust prune gets the
 * closest of them; but every neighbor that stays is kept as a candidate,
 * however far: the far ones are the long edges the build chose, which a
 * search needs to leave a cluster, and tunneling (which sees only the first
 * R_max of a list) most of all.
 */
#ifndef GATEANN_REPAIR_H
#define GATEANN_REPAIR_H

typedef struct GateannRepairCandidate
{
	float		dist;			/* to the node whose list is repaired */
	int			index;			/* the candidate's position in the input */
} GateannRepairCandidate;

/* Candidates at most: all that stay, with at least R and up to 2R in all */
#define GATEANN_REPAIR_MAX_CANDIDATES(nstay, R) \
	((nstay) + (R) > 2 * (R) ? (nstay) + (R) : 2 * (R))

/*
 * Candidates 0 .. nstay-1 stay, nstay .. n-1 are replacements, dist[i] the
 * distance of candidate i.  Writes to chosen (room for n) the positions of
 * the candidates to prune from: every one that stays, in input order, then
 * replacements by increasing distance (ties: input order), at most
 * GATEANN_REPAIR_MAX_CANDIDATES(nstay, R) in all.  scratch has room for n.
 * Returns how many.
 */
extern int	gateann_repair_choose(const float *dist, int nstay, int n, int R,
								  GateannRepairCandidate *scratch, int *chosen);

#endif							/* GATEANN_REPAIR_H */
