/*
 * search.c — graph walks (search.h).
 */
#include "search.h"

uint32_t
gateann_reach(uint32_t nnodes, uint32_t from, GateannNeighborsFn neighbors, void *arg,
			  int max_degree, uint8_t *reached, uint32_t *queue, uint32_t *row)
{
	uint32_t	head = 0,
				tail = 0,
				marked = 0;

	if (from >= nnodes || gateann_reached(reached, from))
		return 0;
	reached[from >> 3] |= (uint8_t) (1 << (from & 7));
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

			if (nb >= nnodes || gateann_reached(reached, nb))
				continue;
			reached[nb >> 3] |= (uint8_t) (1 << (nb & 7));
			queue[tail++] = nb;
		}
	}
	return marked;
}
