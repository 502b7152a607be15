/*
 * verify.c — gateann_verify(regclass): a structural check of an index, in
 * the spirit of amcheck.  Returns one text row per problem found, none for a
 * healthy index.
 *
 * Checked: the metapage (gateann_meta_problem: values in range, entry
 * points, counts, record layout, regions within the index); the page kind of
 * every codebook, dictionary and node page; the codebook's values are
 * finite; each filter column's dictionary is well formed (entry lengths,
 * count, ascending order: gateann_filter_dictionary_problem); every record
 * (its node id; its check; neighbor count, neighbor ids in range, not
 * itself, not a freed slot, not a tail record; its heap TID within the
 * table; its vector indexable and coded by its PQ code, or none for a tail
 * record, which has no
 * neighbors and is no entry point; its copies of the filter columns well
 * formed); freed slots
 * (no neighbors, at or past the free cursor, not the entry point); the
 * deleted and free counts; when this backend can see the index's in-memory
 * stores (shared, or its own private copy), that they agree with the
 * records (present, PQ code, filter codes, neighbor store row, deleted
 * bit); and that every live
 * node is reachable from the entry points over the first R_max neighbors of
 * each list, what a search that tunnels follows.
 *
 * Pages are read through the buffer manager with share locks, one at a
 * time; the check holds ShareLock on the index (AccessShareLock on a hot
 * standby): queries run alongside, writers wait.
 */
#include "postgres.h"

#include <math.h>

#include "gateann.h"
#include "filter.h"
#include "meta.h"
#include "page.h"
#include "pq.h"
#include "reach.h"
#include "store.h"
#include "vector.h"

#include "access/relation.h"
#include "access/tableam.h"
#include "access/xlog.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

PG_FUNCTION_INFO_V1(gateann_verify);

/* Stop listing after this many problems (the last row says so) */
#define MAX_PROBLEMS	1000

typedef struct VerifyState
{
	Tuplestorestate *tupstore;
	TupleDesc	tupdesc;
	int			nproblems;
	BlockNumber heap_blocks;	/* of the table: no heap TID lies beyond */
	GateannMetric metric;
	GateannSlotType types[GATEANN_MAX_FILTER_COLS];
	uint8	   *tail_map;		/* tail records (gateann.h) */
	/* what the loader would make of a record's filter copies */
	GateannFilterCoder *coder;
	uint8	   *codes[GATEANN_MAX_FILTER_COLS];
	float	   *vecbuf;			/* a record's vector decoded */
	GateannPQ	pq;				/* the codebook, when codes are checked */
	bool		check_codes;
	float	   *residual;		/* dims floats */
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

/*
 * The codebook's values (residual centroids, coarse centroids) are finite;
 * when codes are checked, the codebook is kept in vs->pq.
 */
static void
check_codebook(VerifyState *vs, Relation index, const GateannMetaPageData *meta)
{
	Size		total = gateann_pq_codebook_bytes(meta->dims);
	Size		done = 0;
	BlockNumber blkno;

	for (blkno = meta->codebook_start; done < total; blkno++)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		Size		chunk = Min(total - done, (Size) GATEANN_PAGE_CAPACITY);
		const float *f;
		Size		i;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		f = (const float *) PageGetContents(BufferGetPage(buf));
		if (vs->check_codes)
			memcpy((char *) vs->pq.centroids + done, f, chunk);
		for (i = 0; i < chunk / sizeof(float); i++)
			if (!isfinite(f[i]))
			{
				problem(vs, "codebook: block %u holds a non-finite value (%g)", blkno,
						(double) f[i]);
				break;
			}
		UnlockReleaseBuffer(buf);
		done += chunk;
	}
}

#define IS_FREE(map, id)	(((map)[(id) >> 3] & (1 << ((id) & 7))) != 0)

/* gateann_reach's view of the records (reach.h) */
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
	int			r_max = gateann_tunnel_neighbors(gateann_get_options(index), meta);
	uint8	   *reached = palloc_extended(((Size) meta->nnodes + 7) / 8,
										  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	uint32	   *queue = palloc_extended(sizeof(uint32) * (Size) meta->nnodes, MCXT_ALLOC_HUGE);
	uint32	   *row = palloc(sizeof(uint32) * r_max);
	RecordWalk	w;
	uint32		roots[GATEANN_MAX_ENTRIES + 1];
	uint32		id;
	Relation	heap = relation_open(index->rd_index->indrelid, AccessShareLock);
	Snapshot	snapshot = RegisterSnapshot(GetTransactionSnapshot());

	w.index = index;
	w.meta = meta;
	w.rec = palloc(meta->record_size);
	(void) gateann_reach_roots(meta->nnodes, roots, gateann_meta_walk_roots(meta, roots),
							   record_neighbors, &w, r_max, reached, NULL, queue, row);
	for (id = 0; id < meta->nnodes; id++)
	{
		GateannNodeHeader *hdr = (GateannNodeHeader *) w.rec;
		bool		all_dead = false;

		if (gateann_reached(reached, id) || IS_FREE(free_map, id) ||
			IS_FREE(deleted_map, id) || IS_FREE(vs->tail_map, id))
			continue;

		/*
		 * A node whose row nobody can see is no loss: an insert interrupted
		 * by a crash after it wrote the node but before it linked it leaves
		 * such a node, and VACUUM deletes it with the row.
		 */
		gateann_read_record(index, meta, id, w.rec, NULL);
		if (!table_index_fetch_tuple_check(heap, &hdr->heap_tid, snapshot, &all_dead))
			continue;
		problem(vs, "node %u: unreachable from the entry points over the first %d neighbors of each list",
				id, r_max);
	}
	UnregisterSnapshot(snapshot);
	relation_close(heap, AccessShareLock);
	pfree(w.rec);
	pfree(row);
	pfree(queue);
	pfree(reached);
}

/*
 * What the in-memory stores hold for node id against its record: held (as a
 * graph node or a tail record), PQ code, filter codes, neighbor row (shared
 * stores on a primary only: private copies and a standby's stores miss
 * other backends' changes to rows by design, store.c), deleted bit.
 */
static void
check_store_entries(VerifyState *vs, const GateannMetaPageData *meta, uint32 id,
					const char *rec, const GateannStore *store)
{
	GateannNodeHeader *hdr = GateannRecordHeader(rec);
	const uint32 *nbrs = GateannRecordNeighbors(meta, rec);
	int			i;
	int			n;
	uint32		row[GATEANN_MAX_NEIGHBORS_LIMIT];

	if (!((hdr->flags & GATEANN_NODE_TAIL) ? gateann_store_is_tail(store, id) :
		  gateann_store_has(store, id)))
	{
		problem(vs, "node %u: missing from the in-memory stores", id);
		return;
	}
	if (memcmp(gateann_store_code(store, id), GateannRecordPQCode(meta, rec),
			   store->code_bytes) != 0)
		problem(vs, "node %u: in-memory PQ code differs from the record", id);
	if (vs->coder != NULL)
	{
		gateann_filter_coder_code(vs->coder, (const uint8 *) GateannRecordFilter(meta, rec),
								  0, vs->codes);
		for (i = 0; i < meta->nfilter; i++)
		{
			int			width = gateann_filter_store_width(&meta->filter[i]);

			if (memcmp(store->filter_cols[i] + (Size) id * width, vs->codes[i], width) != 0)
				problem(vs, "node %u: in-memory filter code of column %d differs from the record",
						id, i + 2);
		}
	}

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

/* A tail record (gateann.h): of one kind, no vector, no neighbors, no entry point */
static void
check_tail_record(VerifyState *vs, const GateannMetaPageData *meta, uint32 id, const char *rec)
{
	GateannNodeHeader *hdr = GateannRecordHeader(rec);
	int			d;

	if ((hdr->flags & GATEANN_NODE_TAIL) == GATEANN_NODE_TAIL)
		problem(vs, "node %u: tail record both of a NULL vector and of a zero one", id);
	if ((hdr->flags & GATEANN_NODE_NO_DIRECTION) && vs->metric != GATEANN_METRIC_COSINE)
		problem(vs, "node %u: tail record of a zero vector in an index that is not cosine",
				id);
	for (d = 0; d < (int) gateann_record_vector_bytes(meta); d++)
		if (rec[meta->vector_offset + d] != 0)
		{
			problem(vs, "node %u: tail record with a vector", id);
			break;
		}
	if (hdr->nneighbors != 0)
		problem(vs, "node %u: tail record with %u neighbors", id, hdr->nneighbors);
	if (id == meta->entry_point)
		problem(vs, "node %u: the entry point is a tail record", id);
}

/*
 * Is centroid `named` of the 256 (of w floats) one of the nearest to x?
 * Ties and float rounding (the kernels sum in another order) are allowed
 * for.
 */
static bool
named_is_nearest(const float *centroids, int w, const float *x, int named,
				 float *named_dist, float *nearest_dist)
{
	*named_dist = gateann_l2sq(centroids + (Size) named * w, x, w);
	(void) gateann_pq_nearest(centroids, x, w, nearest_dist);
	return *named_dist <= *nearest_dist * (1.0f + 1e-4f) + 1e-20f;
}

/*
 * A node's PQ code codes its vector: the coarse centroid it names is the
 * nearest, and so is each subspace's centroid to the residual.  (Not for
 * half-precision records of a column of singles: the code was made from the
 * vector before it was rounded.)
 */
static void
check_code(VerifyState *vs, const GateannMetaPageData *meta, uint32 id, const char *rec,
		   const float *v)
{
	const uint8 *code = (const uint8 *) GateannRecordPQCode(meta, rec);
	const GateannPQ *pq = &vs->pq;
	int			a = gateann_pq_code_group(code, pq->m);
	const float *ca = pq->coarse + (Size) a * pq->dims;
	float		named;
	float		nearest;
	int			s;
	int			j;

	if (!named_is_nearest(pq->coarse, pq->dims, v, a, &named, &nearest))
	{
		problem(vs, "node %u: its PQ code names coarse centroid %d at squared distance %g, another is at %g",
				id, a, (double) named, (double) nearest);
		return;
	}
	for (j = 0; j < pq->dims; j++)
		vs->residual[j] = v[j] - ca[j];
	for (s = 0; s < pq->m; s++)
	{
		int			off = gateann_pq_sub_offset(pq->dims, pq->m, s);
		int			w = gateann_pq_sub_dims(pq->dims, pq->m, s);

		if (w > 0 &&
			!named_is_nearest(pq->centroids + (Size) GATEANN_PQ_CENTROIDS * off, w,
							  vs->residual + off, code[s], &named, &nearest))
		{
			problem(vs, "node %u: its PQ code names centroid %d of subspace %d at squared distance %g, another is at %g",
					id, code[s], s, (double) named, (double) nearest);
			return;
		}
	}
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
	/* flags and lists change in place; what the check covers never does */
	if (!gateann_record_intact(meta, rec))
		problem(vs, "node %u: record does not match its check (its vector, heap TID or filter copies are not what was written)",
				id);
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
			(gateann_store_has(store, id) || gateann_store_is_tail(store, id)))
			problem(vs, "node %u: free slot present in the in-memory stores", id);
		return;
	}
	if (hdr->flags & GATEANN_NODE_DELETED)
	{
		(*ndeleted)++;
		deleted_map[id >> 3] |= 1 << (id & 7);
	}
	/* (a deleted node's row may be gone with the table's truncated end) */
	if (!ItemPointerIsValid(&hdr->heap_tid))
		problem(vs, "node %u: invalid heap TID", id);
	else if (!(hdr->flags & GATEANN_NODE_DELETED) &&
			 ItemPointerGetBlockNumberNoCheck(&hdr->heap_tid) >= vs->heap_blocks)
		problem(vs, "node %u: heap TID %s beyond the table's %u blocks", id,
				gateann_tid_string(&hdr->heap_tid), vs->heap_blocks);
	if (hdr->flags & GATEANN_NODE_TAIL)
		check_tail_record(vs, meta, id, rec);
	else if (meta->dims == 0)
		problem(vs, "node %u: not a tail record in an index that has seen no vector", id);
	else
	{
		const float *v = gateann_record_vector(meta, rec, vs->vecbuf);
		int			bad = gateann_first_unindexable(v, meta->dims, vs->metric);

		if (bad >= 0)
			problem(vs, "node %u: vector value %g in dimension %d cannot be indexed", id,
					(double) v[bad], bad + 1);
		else if (vs->check_codes)
			check_code(vs, meta, id, rec, v);
	}
	for (i = 0; i < meta->nfilter; i++)
	{
		Datum		value;

		if (gateann_filter_read(meta, GateannRecordFilter(meta, rec), i, vs->types, &value) ==
			GATEANN_SLOT_DAMAGED)
			problem(vs, "node %u: its copy of filter column %d is damaged", id, i + 2);
	}
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
		else if (IS_FREE(free_map, nbrs[i]) && !(hdr->flags & GATEANN_NODE_DELETED))
			problem(vs, "node %u: neighbor %d is node %u, a free slot", id, i, nbrs[i]);
		/*
		 * (VACUUM repairs only live nodes' lists before it frees slots; a
		 * deleted node it has not freed yet -- a crash in between, the
		 * entry point it keeps for a run -- may name freed ones.  No scan
		 * follows such an edge: a free slot is not in the stores.)
		 */
		else if (IS_FREE(vs->tail_map, nbrs[i]))
			problem(vs, "node %u: neighbor %d is node %u, a tail record", id, i, nbrs[i]);
	}

	if (store != NULL)
		check_store_entries(vs, meta, id, rec, store);
}

/* Mark free slots and tail records by their headers; the number of free slots */
static uint32
map_free_and_tail(Relation index, const GateannMetaPageData *meta, uint8 *free_map,
				  uint8 *tail_map)
{
	uint32		nfree = 0;
	uint32		id;

	for (id = 0; id < meta->nnodes; id++)
	{
		GateannNodeHeader hdr;

		if ((id & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		gateann_read_header(index, meta, id, &hdr);
		if (hdr.node_id == id && (hdr.flags & GATEANN_NODE_FREE))
		{
			free_map[id >> 3] |= 1 << (id & 7);
			nfree++;
		}
		else if (hdr.node_id == id && (hdr.flags & GATEANN_NODE_TAIL))
			tail_map[id >> 3] |= 1 << (id & 7);
	}
	return nfree;
}

/*
 * Every record (check_record), after the free slots and tail records are
 * mapped (no record may point to one); then reachability, when nothing so
 * far makes the lists untrustworthy, and the metapage's counts against the
 * records'.
 */
static void
check_records(VerifyState *vs, Relation index, const GateannMetaPageData *meta,
			  GateannStore *store)
{
	uint8	   *free_map = palloc0(((Size) meta->nnodes + 7) / 8);
	uint8	   *deleted_map = palloc0(((Size) meta->nnodes + 7) / 8);
	char	   *rec = palloc(meta->record_size);
	uint32		ndeleted = 0;
	uint32		nfree;
	uint32		id;

	vs->tail_map = palloc0(((Size) meta->nnodes + 7) / 8);
	nfree = map_free_and_tail(index, meta, free_map, vs->tail_map);
	for (id = 0; id < meta->nnodes; id++)
	{
		if ((id & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		gateann_read_record(index, meta, id, rec, NULL);
		check_record(vs, meta, id, rec, store, free_map, deleted_map, &ndeleted);
	}
	pfree(rec);
	if (vs->nproblems == 0 && meta->nnodes > 0 && meta->dims > 0)
		check_reachable(vs, index, meta, free_map, deleted_map);
	if (ndeleted != meta->ndeleted)
		problem(vs, "metapage counts %u deleted nodes, the records %u",
				meta->ndeleted, ndeleted);
	if (nfree != meta->nfree)
		problem(vs, "metapage counts %u free slots, the records %u",
				meta->nfree, nfree);
}

Datum
gateann_verify(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	index;
	GateannMetaPageData meta;
	VerifyState vs;
	GateannStore *store = NULL;
	bool		shared;
	Size		bytes;
	LOCKMODE	lockmode;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	memset(&vs, 0, sizeof(vs));
	vs.tupstore = rsinfo->setResult;
	vs.tupdesc = rsinfo->setDesc;
	vs.nproblems = 0;

	/*
	 * ShareLock: writers (inserts, VACUUM) wait until the check is done.  A
	 * hot standby allows no more than AccessShareLock (and has no writers).
	 */
	lockmode = RecoveryInProgress() ? AccessShareLock : ShareLock;
	index = gateann_open_index(PG_GETARG_OID(0), lockmode, GATEANN_ACCESS_CHECK);
	gateann_read_meta_unchecked(index, &meta);	/* errors out on a non-gateann page */
	{
		char	   *mp = gateann_meta_problem(&meta, index);

		if (mp != NULL)
			problem(&vs, "metapage %s", mp);
		else if (meta.metric != (int32) gateann_index_metric(index))
			problem(&vs, "metapage gives metric %s, the operator class's is %s",
					gateann_metric_name(meta.metric),
					gateann_metric_name(gateann_index_metric(index)));
	}
	if (vs.nproblems > 0)
		goto done;				/* the layout itself is not to be trusted */

	check_region(&vs, index, meta.codebook_start, meta.codebook_pages,
				 GATEANN_PAGE_CODEBOOK, "codebook");
	vs.check_codes = meta.dims > 0 && meta.codebook_pages > 0 && meta.pq_subspaces > 0 &&
		meta.record_precision != GATEANN_PRECISION_HALF;
	if (vs.check_codes)
	{
		gateann_pq_attach(&vs.pq, meta.dims, meta.pq_subspaces,
						  palloc(gateann_pq_codebook_bytes(meta.dims)));
		vs.residual = palloc(sizeof(float) * meta.dims);
		gateann_distance_init();
	}
	if (meta.dims > 0 && meta.codebook_pages > 0)
		check_codebook(&vs, index, &meta);
	vs.metric = (GateannMetric) meta.metric;
	vs.vecbuf = palloc(sizeof(float) * Max(meta.dims, 1));
	gateann_filter_slot_types(&meta, vs.types);
	{
		Relation	heap = relation_open(index->rd_index->indrelid, AccessShareLock);

		vs.heap_blocks = RelationGetNumberOfBlocks(heap);
		relation_close(heap, AccessShareLock);
	}
	check_region(&vs, index, meta.dict_start, meta.dict_pages,
				 GATEANN_PAGE_DICT, "dictionary");
	check_region(&vs, index, meta.node_start, meta.node_pages,
				 GATEANN_PAGE_NODES, "node");
	if (vs.nproblems > 0)
		goto done;
	if (meta.nfilter > 0)
	{
		char	   *dict = gateann_store_read_dictionaries(index, &meta);
		int			c;

		for (c = 0; c < meta.nfilter; c++)
		{
			char	   *dp = gateann_filter_dictionary_problem(index, &meta, c, dict);

			if (dp != NULL)
				problem(&vs, "dictionaries: %s", dp);
		}
		pfree(dict);
	}

	/* compare with the stores only if they are already loaded: no side effects */
	if (gateann_store_loaded(index, &meta, &shared, &bytes))
		store = gateann_store_get(index, &meta);
	if (store != NULL && meta.nfilter > 0)
	{
		int			c;

		vs.coder = gateann_filter_coder_create(index, &meta, store->dict);
		for (c = 0; c < meta.nfilter; c++)
			vs.codes[c] = palloc(gateann_filter_store_width(&meta.filter[c]));
	}

	check_records(&vs, index, &meta, store);

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
