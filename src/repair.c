/*
 * repair.c — choosing the candidates of a list VACUUM repairs: see repair.h.
 */
#include "repair.h"

#include <stdlib.h>

static int
cmp_candidate(const void *a, const void *b)
{
	const GateannRepairCandidate *ca = a;
	const GateannRepairCandidate *cb = b;

	if (ca->dist != cb->dist)
		return ca->dist < cb->dist ? -1 : 1;
	return (ca->index > cb->index) - (ca->index < cb->index);
}

int
gateann_repair_choose(const float *dist, int nstay, int n, int R,
					  GateannRepairCandidate *scratch, int *chosen)
{
	int			limit = GATEANN_REPAIR_MAX_CANDIDATES(nstay, R);
	int			nrepl = n - nstay;
	int			out = 0;
	int			i;

	for (i = 0; i < nstay && i < n; i++)
		chosen[out++] = i;
	if (nrepl <= 0)
		return out;
	for (i = 0; i < nrepl; i++)
	{
		scratch[i].dist = dist[nstay + i];
		scratch[i].index = nstay + i;
	}
	qsort(scratch, nrepl, sizeof(GateannRepairCandidate), cmp_candidate);
	for (i = 0; i < nrepl && out < limit; i++)
		chosen[out++] = scratch[i].index;
	return out;
}
