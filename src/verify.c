/*
 * verify.c — gateann_verify(regclass): a structural check of an index, in
 * the spirit of amcheck.  Returns one text row per problem found, none for a
 * healthy index.
 *
 * Checked: the metapage (magic, format, region bounds, entry points, counts);
 * the page kind of every codebook, dictionary and node page; every record
 * (its node id, neighbor count, neighbor ids in range, not itself and not a
 * freed slot, heap TID); freed slots (no neighbors, at or past the free
 * cursor, not the entry point); the deleted and free counts; and, when this backend can see the index's
 * in-memory stores (shared, or its own private copy), that they agree with
 * the records (PQ code, neighbor store row, deleted bit); and that every live
 * node is reachable from the entry points over the first R_max neighbors
 * of each list, what a search that tunnels follows.
 *
 * Pages are read through the buffer manager with share locks, one at a
 * time; the check holds AccessShareLock like a scan, so it runs alongside
 * queries.
 */
#include "postgres.h"

#include "gateann.h"
#include "page.h"
#include "search.h"
#include "store.h"

#include "access/xlog.h"

#include "access/relation.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(gateann_verify);

/* Stop listing after this many problems (the last row says so) */
#define MAX_PROBLEMS	1000

typedef struct VerifyState
{
	Tuplestorestate *tupstore;
	TupleDesc	tupdesc;
	int			nproblems;
} VerifyState;

static void
problem(VerifyState *vs, const char *fmt,...) pg_attribute_printf(2, 3);

static void
problem(VerifyState *vs, const char *fmt,...)
{
	va_list		args;
	char		buf[512];
	Datum		value;
	bool		isnull = false;

	if (++vs->nproblems > MAX_PROBLEMS)
		return;
	va_start(args, fmt);
	vsnprintf(buf, sizeof(buf), fmt, args);
	va_end(args);
	value = CStringGetTextDatum(buf);
	tuplestore_putvalues(vs->tupstore, vs->tupdesc, &value, &isnull);
}

static void
check_region(VerifyState *vs, Relation index, BlockNumber start, BlockNumber npages,
			 uint16 kind, const char *what)
{
	BlockNumber blkno;

	for (blkno = start; blkno < start + npages; blkno++)
	{
		Buffer		buf = ReadBuffer(index, blkno);

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		if (!gateann_page_is_valid(BufferGetPage(buf), kind))
			problem(vs, "block %u: not a %s page", blkno, what);
		UnlockReleaseBuffer(buf);
	}
}

#define IS_FREE(map, id)	(((map)[(id) >> 3] & (1 << ((id) & 7))) != 0)

/* gateann_reach's view of the records (search.h) */
typedef struct RecordWalk
{
	Relation	index;
	const GateannMetaPageData *meta;
	char	   *rec;
} RecordWalk;

static int
record_neighbors(void *arg, uint32 id, uint32 *out, int max)
{
	RecordWalk *w = (RecordWalk *) arg;
	GateannNodeHeader *hdr = GateannRecordHeader(w->rec);
	int			n;

	CHECK_FOR_INTERRUPTS();
	gateann_read_record(w->index, w->meta, id, w->rec, NULL);
	if (hdr->node_id != id || (hdr->flags & GATEANN_NODE_FREE))
		return -1;
	n = Min(Min((int) hdr->nneighbors, w->meta->max_neighbors), max);
	memcpy(out, GateannRecordNeighbors(w->meta, w->rec), sizeof(uint32) * n);
	return n;
}

/*
 * Every live node (not free, not deleted: deleted_map) must be reachable
 * from the entry points over the first r_max neighbors of each list.
 */
static void
check_reachable(VerifyState *vs, Relation index, const GateannMetaPageData *meta,
				const uint8 *free_map, const uint8 *deleted_map)
{
	int			r_max = Max(1, Min(gateann_get_options(index)->tunnel_neighbors,
								   meta->max_neighbors));
	uint8	   *reached = palloc_extended(((Size) meta->nnodes + 7) / 8,
										  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	uint32	   *queue = palloc_extended(sizeof(uint32) * (Size) meta->nnodes, MCXT_ALLOC_HUGE);
	uint32	   *row = palloc(sizeof(uint32) * r_max);
	RecordWalk	w;
	uint32		id;

	w.index = index;
	w.meta = meta;
	w.rec = palloc(meta->record_size);
	(void) gateann_reach(meta->nnodes, meta->entry_point, record_neighbors, &w, r_max,
						 reached, queue, row);
	for (id = 0; id < meta->nentries && id < GATEANN_MAX_ENTRIES; id++)
		(void) gateann_reach(meta->nnodes, meta->entries[id], record_neighbors, &w, r_max,
							 reached, queue, row);
	for (id = 0; id < meta->nnodes; id++)
		if (!gateann_reached(reached, id) && !IS_FREE(free_map, id) &&
			!IS_FREE(deleted_map, id))
			problem(vs, "node %u: unreachable from the entry points over the first %d neighbors of each list",
					id, r_max);
	pfree(w.rec);
	pfree(row);
	pfree(queue);
	pfree(reached);
}

static void
check_record(VerifyState *vs, const GateannMetaPageData *meta, uint32 id,
			 const char *rec, const GateannStore *store, const uint8 *free_map,
			 uint8 *deleted_map, uint32 *ndeleted)
{
	GateannNodeHeader *hdr = GateannRecordHeader(rec);
	const uint32 *nbrs = GateannRecordNeighbors(meta, rec);
	int			i;

	if (hdr->node_id != id)
	{
		problem(vs, "node %u: record holds node id %u", id, hdr->node_id);
		return;
	}
	if (hdr->flags & GATEANN_NODE_FREE)
	{
		if (!(hdr->flags & GATEANN_NODE_DELETED))
			problem(vs, "node %u: free slot not flagged deleted", id);
		if (hdr->nneighbors != 0)
			problem(vs, "node %u: free slot has %u neighbors", id, hdr->nneighbors);
		if (id < meta->free_cursor)
			problem(vs, "node %u: free slot before the free cursor %u", id, meta->free_cursor);
		if (id == meta->entry_point)
			problem(vs, "node %u: the entry point is a free slot", id);
		if (store != NULL && store->shared && !RecoveryInProgress() &&
			gateann_store_has(store, id))
			problem(vs, "node %u: free slot present in the in-memory stores", id);
		return;
	}
	if (hdr->flags & GATEANN_NODE_DELETED)
	{
		(*ndeleted)++;
		deleted_map[id >> 3] |= 1 << (id & 7);
	}
	if (!ItemPointerIsValid(&hdr->heap_tid))
		problem(vs, "node %u: invalid heap TID", id);
	if (hdr->nneighbors > meta->max_neighbors)
	{
		problem(vs, "node %u: %u neighbors, max_neighbors is %d", id,
				hdr->nneighbors, meta->max_neighbors);
		return;
	}
	for (i = 0; i < hdr->nneighbors; i++)
	{
		if (nbrs[i] >= meta->nnodes)
			problem(vs, "node %u: neighbor %d is node %u, beyond the %u nodes",
					id, i, nbrs[i], meta->nnodes);
		else if (nbrs[i] == id)
			problem(vs, "node %u: neighbor %d is the node itself", id, i);
		else if (IS_FREE(free_map, nbrs[i]))
			problem(vs, "node %u: neighbor %d is node %u, a free slot", id, i, nbrs[i]);
	}

	if (store != NULL)
	{
		int			n;
		uint32		row[GATEANN_MAX_NEIGHBORS_LIMIT];

		if (!gateann_store_has(store, id))
		{
			problem(vs, "node %u: missing from the in-memory stores", id);
			return;
		}
		if (memcmp(gateann_store_code(store, id), GateannRecordPQCode(meta, rec),
				   store->code_bytes) != 0)
			problem(vs, "node %u: in-memory PQ code differs from the record", id);

		/*
		 * Rows are kept current by writers in a shared store only: private
		 * copies and a standby's stores miss other backends' changes to
		 * existing rows by design (store.c).
		 */
		n = gateann_store_copy_neighbors(store, id, row);
		if (store->shared && !RecoveryInProgress() &&
			(n != Min((int) hdr->nneighbors, store->tunnel_neighbors) ||
			 memcmp(row, nbrs, sizeof(uint32) * n) != 0))
			problem(vs, "node %u: neighbor store row differs from the record", id);
		if (gateann_store_is_deleted(store, id) && !(hdr->flags & GATEANN_NODE_DELETED))
			problem(vs, "node %u: deleted in memory, not in the record", id);
	}
}

Datum
gateann_verify(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	index;
	GateannMetaPageData meta;
	VerifyState vs;
	BlockNumber nblocks;
	GateannStore *store = NULL;
	bool		shared;
	Size		bytes;
	char	   *rec;
	uint32		id;
	uint32		ndeleted = 0;
	uint32		nfree = 0;
	uint8	   *free_map;
	uint8	   *deleted_map;
	LOCKMODE	lockmode;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	vs.tupstore = rsinfo->setResult;
	vs.tupdesc = rsinfo->setDesc;
	vs.nproblems = 0;

	/*
	 * ShareLock: writers (inserts, VACUUM) wait until the check is done.  A
	 * hot standby allows no more than AccessShareLock (and has no writers).
	 */
	lockmode = RecoveryInProgress() ? AccessShareLock : ShareLock;
	index = gateann_open_index(PG_GETARG_OID(0), lockmode, GATEANN_ACCESS_CHECK);
	gateann_read_meta(index, &meta);	/* errors out on a bad metapage */
	nblocks = RelationGetNumberOfBlocks(index);

	if (meta.nnodes > 0 && meta.entry_point >= meta.nnodes)
		problem(&vs, "metapage: entry point %u beyond the %u nodes",
				meta.entry_point, meta.nnodes);
	if (meta.nentries > GATEANN_MAX_ENTRIES)
		problem(&vs, "metapage: %u entry points, at most %d", meta.nentries,
				GATEANN_MAX_ENTRIES);
	else
	{
		for (id = 0; id < meta.nentries; id++)
			if (meta.entries[id] >= meta.nnodes)
				problem(&vs, "metapage: entry point %u is node %u, beyond the %u nodes",
						id, meta.entries[id], meta.nnodes);
	}
	if ((uint64) meta.ndeleted + meta.nfree > meta.nnodes)
		problem(&vs, "metapage: %u deleted and %u free of %u nodes",
				meta.ndeleted, meta.nfree, meta.nnodes);
	if (meta.node_start + meta.node_pages > nblocks)
		problem(&vs, "metapage: node pages end at block %u, the index has %u blocks",
				meta.node_start + meta.node_pages, nblocks);
	if (meta.records_per_page > 0 &&
		(uint64) meta.node_pages * meta.records_per_page < meta.nnodes)
		problem(&vs, "metapage: %u node pages cannot hold %u nodes",
				meta.node_pages, meta.nnodes);
	if (meta.records_per_page == 0 &&
		(uint64) meta.node_pages < (uint64) meta.nnodes * meta.pages_per_record)
		problem(&vs, "metapage: %u node pages cannot hold %u nodes",
				meta.node_pages, meta.nnodes);
	if (vs.nproblems > 0)
		goto done;				/* the layout itself is not to be trusted */

	check_region(&vs, index, meta.codebook_start, meta.codebook_pages,
				 GATEANN_PAGE_CODEBOOK, "codebook");
	check_region(&vs, index, meta.dict_start, meta.dict_pages,
				 GATEANN_PAGE_DICT, "dictionary");
	check_region(&vs, index, meta.node_start, meta.node_pages,
				 GATEANN_PAGE_NODES, "node");
	if (vs.nproblems > 0)
		goto done;

	/* compare with the stores only if they are already loaded: no side effects */
	if (gateann_store_loaded(index, &meta, &shared, &bytes))
		store = gateann_store_get(index, &meta);

	/* free slots first: no record may point to one */
	free_map = palloc0(((Size) meta.nnodes + 7) / 8);
	for (id = 0; id < meta.nnodes; id++)
	{
		GateannNodeHeader hdr;

		if ((id & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		gateann_read_header(index, &meta, id, &hdr);
		if (hdr.node_id == id && (hdr.flags & GATEANN_NODE_FREE))
		{
			free_map[id >> 3] |= 1 << (id & 7);
			nfree++;
		}
	}

	rec = palloc(meta.record_size);
	deleted_map = palloc0(((Size) meta.nnodes + 7) / 8);
	for (id = 0; id < meta.nnodes; id++)
	{
		if ((id & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		gateann_read_record(index, &meta, id, rec, NULL);
		check_record(&vs, &meta, id, rec, store, free_map, deleted_map, &ndeleted);
	}
	pfree(rec);
	if (vs.nproblems == 0 && meta.nnodes > 0)
		check_reachable(&vs, index, &meta, free_map, deleted_map);
	if (ndeleted != meta.ndeleted)
		problem(&vs, "metapage counts %u deleted nodes, the records %u",
				meta.ndeleted, ndeleted);
	if (nfree != meta.nfree)
		problem(&vs, "metapage counts %u free slots, the records %u",
				meta.nfree, nfree);

done:
	if (vs.nproblems > MAX_PROBLEMS)
	{
		int			more = vs.nproblems - MAX_PROBLEMS;

		vs.nproblems = 0;		/* let this last row through */
		problem(&vs, "... and %d more problems", more);
	}
	relation_close(index, lockmode);
	return (Datum) 0;
}
