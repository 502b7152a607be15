/*
 * tail.h — the rows an ordered scan returns without a distance.
 *
 * A row's distance to a query is NULL when its vector is NULL, NaN when its
 * vector is zero under cosine (it has no direction): such rows are tail
 * records (gateann.h, GATEANN_NODE_TAIL), outside the graph.  And every
 * row's distance is NULL for a NULL query, NaN for a zero query under
 * cosine.  ORDER BY distance (NULLS LAST) puts NaN after every number and
 * NULL after NaN, so a scan returns, after the rows its search ranks:
 *
 *   GATEANN_TAIL_GRAPH   the graph's nodes, when the query itself has no
 *                        distance to them (no search then);
 *   GATEANN_TAIL_NAN     tail records of zero vectors;
 *   GATEANN_TAIL_NULL    tail records of NULL vectors;
 *
 * each class in node id order, every row checked against the filter (the
 * filter store, then its record's copies), as a search checks its rows.
 */
#ifndef GATEANN_TAIL_H
#define GATEANN_TAIL_H

#include "gateann.h"
#include "filter.h"
#include "store.h"

#define GATEANN_TAIL_GRAPH	0x01
#define GATEANN_TAIL_NAN	0x02
#define GATEANN_TAIL_NULL	0x04

typedef struct GateannTailScan
{
	int			classes;		/* GATEANN_TAIL_* still to return */
	uint32		next;			/* node id the current class goes on from */
	char	   *record;			/* meta->record_size bytes */
} GateannTailScan;

/* Return the rows of `classes` (none: nothing) */
extern void gateann_tail_begin(GateannTailScan *ts, int classes,
							   const GateannMetaPageData *meta);

/*
 * The next row: its heap TID, whether the executor must recheck the
 * filter on it (the record could not decide), and its class.  False when
 * no row is left.  filter NULL: no conditions on filter columns.
 */
extern bool gateann_tail_next(GateannTailScan *ts, Relation index,
							  const GateannMetaPageData *meta, const GateannStore *store,
							  const GateannFilter *filter, ItemPointer tid, bool *recheck,
							  int *class);

#endif							/* GATEANN_TAIL_H */
