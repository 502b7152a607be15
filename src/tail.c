/*
 * tail.c — returning the rows a scan has no distance for (tail.h).
 *
 * A pass over node ids per class: the store's bits say which ids are graph
 * nodes (present) or tail records, and which are deleted; the filter store
 * rules out what it can; the record, read through the buffer manager
 * (these rows are few, or the query is one no search answers), gives the
 * heap TID, which of the two tail records it is, and the exact filter
 * check.  Ids up to the store's capacity are looked at, so rows inserted
 * since the scan began may come too; the executor's snapshot decides.
 */
#include "postgres.h"

#include "tail.h"
#include "page.h"

#include "miscadmin.h"

void
gateann_tail_begin(GateannTailScan *ts, int classes, const GateannMetaPageData *meta)
{
	ts->classes = classes;
	ts->next = 0;
	ts->record = classes != 0 ? palloc(meta->record_size) : NULL;
}

/* The lowest class still to return */
static inline int
current_class(const GateannTailScan *ts)
{
	return ts->classes & -ts->classes;
}

/* Could node id be a row of `class`, by the store alone? */
static bool
store_may_hold(const GateannStore *store, const GateannFilter *filter, uint32 id, int class)
{
	if (class == GATEANN_TAIL_GRAPH ? !gateann_store_has(store, id) :
		!gateann_store_is_tail(store, id))
		return false;
	if (gateann_store_is_deleted(store, id))
		return false;
	return filter == NULL ||
		gateann_filter_store_pass(filter, (const uint8 *const *) store->filter_cols, id);
}

/* Does the record (read for id) belong to `class`? */
static bool
record_of_class(const GateannNodeHeader *hdr, uint32 id, int class)
{
	if (hdr->node_id != id || (hdr->flags & (GATEANN_NODE_DELETED | GATEANN_NODE_FREE)))
		return false;
	switch (class)
	{
		case GATEANN_TAIL_GRAPH:
			return (hdr->flags & GATEANN_NODE_TAIL) == 0;
		case GATEANN_TAIL_NAN:
			return (hdr->flags & GATEANN_NODE_NO_DIRECTION) != 0;
		default:
			return (hdr->flags & GATEANN_NODE_NULL_VECTOR) != 0;
	}
}

bool
gateann_tail_next(GateannTailScan *ts, Relation index, const GateannMetaPageData *meta,
				  const GateannStore *store, const GateannFilter *filter, ItemPointer tid,
				  bool *recheck, int *class)
{
	while (ts->classes != 0)
	{
		int			c = current_class(ts);

		while (ts->next < store->capacity)
		{
			uint32		id = ts->next++;
			GateannNodeHeader *hdr = GateannRecordHeader(ts->record);
			GateannFilterResult fr = GATEANN_FILTER_PASS;

			if ((id & 1023) == 0)
				CHECK_FOR_INTERRUPTS();
			if (!store_may_hold(store, filter, id, c))
				continue;
			gateann_read_intact_record(index, meta, id, ts->record);
			if (!record_of_class(hdr, id, c))
				continue;
			if (filter != NULL)
				fr = gateann_filter_record_check(filter, meta, ts->record);
			if (fr == GATEANN_FILTER_FAIL)
				continue;
			*tid = hdr->heap_tid;
			*recheck = (fr == GATEANN_FILTER_UNKNOWN);
			*class = c;
			return true;
		}
		ts->classes &= ~c;
		ts->next = 0;
	}
	return false;
}
