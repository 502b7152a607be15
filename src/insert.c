/*
 * insert.c — aminsert: adding a row to a built index (FreshDiskANN's insert).
 *
 *   1. encode the new vector with the index's PQ codebook and copy its
 *      filter columns into a record, as the build does;
 *   2. greedy search for it from the entry point (PQ distances steer, every
 *      expanded record is read through the buffer manager for its exact
 *      distance and full neighbor list);
 *   3. robust prune of the expanded nodes (alpha of the build) gives its
 *      neighbors, ordered for tunneling like every list;
 *   4. under the metapage lock take a slot VACUUM freed, else the next node
 *      id, and write the record (generic WAL: metapage and node page in
 *      one record when they fit); then drop any neighbor VACUUM deleted
 *      while the search ran;
 *   5. add the reverse edge to each neighbor's list, one page at a time: an
 *      append while the list has room, else a robust prune of the list plus
 *      the new node on exact vectors (those the search read, or the
 *      neighbors' records through shared buffers).
 *
 * A row whose vector has no distance (NULL; zero under cosine) becomes a
 * tail record (gateann.h): steps 1 and 4 only, no neighbors, never an entry
 * point, published in the store as a tail record.
 *
 * No lock is held across steps: the metapage lock only while a node id is
 * taken and its record written, each neighbor's page lock only while its
 * list is rewritten.  Scans take page locks in share mode one page at a time
 * (or read the files directly), so they never see a torn list; a list is
 * either the old or the new one.
 *
 * The in-memory stores are updated in place, in the order scans need:
 * the new node's PQ code, filter codes and neighbor row, then its "present"
 * bit (scans skip ids whose bit is not set), then its reverse edges.  Every
 * change to a neighbor-store row and every node block mark is made while the
 * page it mirrors is locked, so the stores change in the same order as the
 * pages.  If a store of the index began loading after this insert got its
 * own (its own evicted, outgrown, or one it could not use), the nodes this
 * insert touched are copied again from their pages into that store.
 *
 * The files the scans read directly lag shared buffers: each changed block
 * gets a mark in the store (the page's new LSN), and scans re-read a block
 * whose file copy is older through the buffer manager (scan.c).  Pages of
 * relations without WAL have no LSNs: there the changed pages are written
 * out before the insert returns, as they are when the stores are private
 * copies (whose marks other backends cannot see).
 */
#include "postgres.h"

#include "gateann.h"
#include "distance.h"
#include "filter.h"
#include "graph.h"
#include "meta.h"
#include "page.h"
#include "pq.h"
#include "retrain.h"
#include "reach.h"
#include "search.h"
#include "store.h"
#include "vector.h"

#include "access/generic_xlog.h"
#include "nodes/execnodes.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/float.h"
#include "utils/memutils.h"
#include "utils/rel.h"

/* Entry points an insert's search starts from (the nearest) */
#define GATEANN_INSERT_ENTRY_SEEDS	4

/* How far an insert among deleted nodes widens its search (choose_neighbors) */
#define GATEANN_INSERT_MAX_LIST_FACTOR	8

/* A node the search expanded */
typedef struct Expanded
{
	uint32		id;
	float		dist;			/* exact, squared L2 */
	bool		deleted;
} Expanded;

typedef struct InsertState
{
	Relation	index;
	GateannMetaPageData meta;
	GateannStore *store;
	int			r_max;
	uint16		tail;			/* the new row's tail flags (gateann.h), or 0 */
	float	   *vector;			/* the new vector (unit length for cosine) */
	int			dims;			/* its dimensions */
	uint32		nbrs[GATEANN_MAX_NEIGHBORS_LIMIT];	/* its neighbors */
	int			nn;
	float	   *table;			/* PQ distance table of vector */
	char	   *record;			/* the new record */
	GateannStoreFilterCodes filter_codes;	/* its filters' store codes */
	char	   *scratch;		/* a record read back */
	char	   *scratch2;
	/* the search's expanded nodes, with exact vectors */
	Expanded   *exp;
	float	   *exp_vectors;
	int			nexp;
	uint32	   *exp_by_id;		/* positions in exp, ordered by node id */
	bool		poor_code;		/* coded poorly (retrain.h) */
	float		record_error;	/* halves: |v - half(v)| (meta->record_error) */
	/* neighbors reverse-edge prunes dropped from their lists */
	uint32		dropped[GATEANN_MAX_NEIGHBORS_LIMIT];
	int			ndropped;
	/* no live node found: the new node becomes the entry point */
	bool		become_entry;
	uint32		searched_entry;
	/* the metapage said VACUUM frees slots when the id was taken */
	bool		freeing_slots;
	/* reverse-edge prunes */
	float	   *jvec;			/* the neighbor's vector */
	float	   *known;			/* its neighbors' exact vectors */
	float	   *decoded;		/* candidates' vectors */
} InsertState;

/* ---- 2. the search ------------------------------------------------------ */

/* The search in progress: where its expansions go */
typedef struct InsertWalk
{
	InsertState *is;
	uint8	   *visited;		/* one bit per id below the store's capacity */
	Expanded   *exp;
	float	   *exp_vectors;
	int			nexp;
} InsertWalk;


/*
 * Read node id's record into is->scratch, through shared buffers, and keep
 * it in *exp as expanded: its exact vector (into vector), distance, and
 * whether it is deleted.  Returns its header.
 */
static GateannNodeHeader *
keep_expanded(InsertState *is, uint32 id, Expanded *exp, float *vector)
{
	GateannNodeHeader *hdr;

	gateann_read_record(is->index, &is->meta, id, is->scratch, NULL);
	hdr = GateannRecordHeader(is->scratch);
	gateann_record_check_node(is->index, hdr, id);
	exp->id = id;
	exp->deleted = (hdr->flags & GATEANN_NODE_DELETED) != 0;
	gateann_record_copy_vector(&is->meta, is->scratch, vector);
	exp->dist = gateann_l2sq(is->vector, vector, is->meta.dims);
	return hdr;
}

/*
 * An expansion: read the record through shared buffers, keep its exact
 * vector and distance, and return its neighbors not met yet with their PQ
 * distances.
 */
static int
expand_insert(void *arg, uint32_t id, float dist, uint32_t *ids, float *dists)
{
	InsertWalk *w = arg;
	InsertState *is = w->is;
	const GateannMetaPageData *meta = &is->meta;
	GateannNodeHeader *hdr;
	const uint32 *nbrs;
	int			nn,
				n = 0,
				i;

	CHECK_FOR_INTERRUPTS();
	hdr = keep_expanded(is, id, &w->exp[w->nexp], w->exp_vectors + (Size) w->nexp * meta->dims);
	w->nexp++;

	nbrs = GateannRecordNeighbors(meta, is->scratch);
	nn = Min((int) hdr->nneighbors, meta->max_neighbors);
	for (i = 0; i < nn; i++)
	{
		uint32		nb = nbrs[i];

		if (!gateann_store_has(is->store, nb) || gateann_visit(w->visited, nb))
			continue;
		ids[n] = nb;
		dists[n++] = gateann_pq_code_distance(is->table, gateann_store_code(is->store, nb),
											  meta->pq_subspaces);
	}
	return n;
}

/*
 * Greedy search for the new vector with list size L (search.c's walk, PQ
 * distances steering).  Fills exp[] (room for max_exp) with the expanded
 * nodes, their vectors into exp_vectors; returns how many.
 */
static int
insert_search(InsertState *is, int L, Expanded *exp, float *exp_vectors, int max_exp)
{
	const GateannMetaPageData *meta = &is->meta;
	GateannStore *store = is->store;
	GateannCandidate *list = palloc(sizeof(GateannCandidate) * L);
	uint32	   *nb_ids = palloc(sizeof(uint32) * Max(meta->max_neighbors, 1));
	float	   *nb_dists = palloc(sizeof(float) * Max(meta->max_neighbors, 1));
	int			size = 0;
	uint32		entry = meta->entry_point;
	uint32		seeds[GATEANN_MAX_ENTRIES + 1];
	int			nseeds;
	int			k;
	InsertWalk	w;

	w.is = is;
	w.visited = palloc0(((Size) store->capacity + 7) / 8);
	w.exp = exp;
	w.exp_vectors = exp_vectors;
	w.nexp = 0;

	/*
	 * From the entry points nearest the new vector (the medoid alone in an
	 * index without others), as a scan starts.
	 */
	is->searched_entry = entry;
	if (!gateann_store_has(store, entry))
		return 0;
	/* entry_point first: the others in the store's copy may have been deleted since */
	seeds[0] = entry;
	nseeds = 1 + Min(gateann_store_entries_by_distance(store, meta, is->table, seeds + 1,
													   GATEANN_INSERT_ENTRY_SEEDS),
					 GATEANN_INSERT_ENTRY_SEEDS);
	for (k = 0; k < nseeds; k++)
		if (!gateann_visit(w.visited, seeds[k]))
			gateann_candidate_insert(list, &size, L, seeds[k],
									 gateann_pq_code_distance(is->table,
															  gateann_store_code(store, seeds[k]),
															  meta->pq_subspaces));
	(void) gateann_best_first(list, size, L, max_exp, expand_insert, NULL, &w, nb_ids, nb_dists);
	return w.nexp;
}

/* ---- 4. a node id and its record ---------------------------------------- */

/* A node block at `blkno`: an existing page, or the relation extended to it. */
static Buffer
node_block(Relation index, BlockNumber blkno, bool *is_new)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	Buffer		buf;

	if (blkno < nblocks)
	{
		/* an existing page (or one an interrupted insert left behind) */
		buf = ReadBuffer(index, blkno);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		*is_new = !gateann_page_is_valid(BufferGetPage(buf), GATEANN_PAGE_NODES);
		return buf;
	}
	if (blkno > nblocks)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gateann index \"%s\": node block %u is past the end (%u blocks)",
						RelationGetRelationName(index), blkno, nblocks),
				 errhint("REINDEX the index.")));
	/* the metapage lock makes us the only one extending (see allocate) */
	buf = gateann_new_buffer(index, MAIN_FORKNUM);
	if (BufferGetBlockNumber(buf) != blkno)
		elog(ERROR, "gateann: extended to block %u, expected %u",
			 BufferGetBlockNumber(buf), blkno);
	*is_new = true;
	return buf;
}

/*
 * A slot VACUUM freed, found under the metapage lock (every allocation
 * holds it, so no one else can take the slot meanwhile): from the
 * metapage's free_cursor on, an id the store holds no node for, confirmed
 * by the FREE flag in its record.  The record's pages are left locked in
 * bufs.  Returns InvalidNodeId if there is none (a private copy of the
 * stores may not know slots freed after it was loaded: those are left to
 * others).
 *
 * No I/O under the metapage lock: a candidate whose pages are not in
 * shared buffers is returned in *unread instead (with InvalidNodeId); the
 * caller reads them with no lock held, keeps them pinned and comes back.
 */
static uint32
take_free_slot(InsertState *is, const GateannMetaPageData *disk, Buffer *bufs,
			   uint32 *old_version, uint32 *unread)
{
	const GateannMetaPageData *meta = &is->meta;
	GateannStore *store = is->store;
	uint32		limit = Min(disk->nnodes, store->capacity);
	uint32		id = disk->free_cursor;
	uint32		k;

	while (id < limit)
	{
		GateannRecordLoc loc;
		GateannNodeHeader hdr;

		/* 32 nodes at a time while they are all present or tail records */
		if ((id & 31) == 0 && id + 32 <= limit &&
			(pg_atomic_read_u32(&store->present[id >> 5]) |
			 pg_atomic_read_u32(&store->tail[id >> 5])) == PG_UINT32_MAX)
		{
			id += 32;
			continue;
		}
		if (gateann_store_has(store, id) || gateann_store_is_tail(store, id))
		{
			id++;
			continue;
		}
		loc = gateann_record_location(meta, id);
		for (k = 0; k < meta->pages_per_record; k++)
		{
			/* (a temporary index's local buffers: no one else waits on it) */
			bufs[k] = RelationUsesLocalBuffers(is->index) ?
				ReadBuffer(is->index, loc.block + k) :
				gateann_pin_resident(is->index, loc.block + k, NULL);
			if (!BufferIsValid(bufs[k]))
			{
				while (k-- > 0)
					UnlockReleaseBuffer(bufs[k]);
				*unread = id;
				return InvalidNodeId;
			}
			LockBuffer(bufs[k], BUFFER_LOCK_EXCLUSIVE);
		}
		if (gateann_page_is_valid(BufferGetPage(bufs[0]), GATEANN_PAGE_NODES))
		{
			memcpy(&hdr, PageGetContents(BufferGetPage(bufs[0])) + loc.offset, sizeof(hdr));
			if (hdr.node_id == id && (hdr.flags & GATEANN_NODE_FREE))
			{
				*old_version = hdr.version;
				return id;
			}
		}
		for (k = 0; k < meta->pages_per_record; k++)
			UnlockReleaseBuffer(bufs[k]);
		id++;
	}
	return InvalidNodeId;
}

/* free-slot candidates allocate_and_write reads outside the metapage lock, at most */
#define FREE_SLOT_READS 8

static void
release_pins(const Buffer *bufs, int n)
{
	while (n-- > 0)
		ReleaseBuffer(bufs[n]);
}

/*
 * Write pages [first, first + n) of the new record at `loc` in one generic
 * WAL record; with `metabuf` valid, the metapage changes of the allocation
 * join it.
 */
static void
write_record_pages(InsertState *is, GateannRecordLoc loc, Buffer *bufs, const bool *is_new,
				   uint32 first, uint32 n, Buffer metabuf, uint32 id, bool reused)
{
	const GateannMetaPageData *meta = &is->meta;
	GenericXLogState *state = GenericXLogStart(is->index);
	uint32		k;

	for (k = first; k < first + n; k++)
	{
		/* a fresh page has no base for a delta: log it whole */
		Page		page = GenericXLogRegisterBuffer(state, bufs[k],
													 is_new[k] ? GENERIC_XLOG_FULL_IMAGE : 0);
		uint32		from = (k == 0) ? 0 : k * GATEANN_PAGE_CAPACITY - loc.offset;
		uint32		offset = (k == 0) ? loc.offset : 0;
		uint32		chunk = Min(meta->record_size - from,
								(uint32) GATEANN_PAGE_CAPACITY - offset);
		Size		used;

		if (is_new[k])
			gateann_init_page(page, GATEANN_PAGE_NODES);
		used = ((PageHeader) page)->pd_lower - MAXALIGN(SizeOfPageHeaderData);
		memcpy(PageGetContents(page) + offset, is->record + from, chunk);
		gateann_page_set_used(page, Max(used, (Size) offset + chunk));
	}
	if (BufferIsValid(metabuf))
	{
		Page		mpage = GenericXLogRegisterBuffer(state, metabuf, 0);
		GateannMetaPageData *m = GateannPageGetMeta(mpage);

		if (reused)
			gateann_meta_take_slot(m, id);
		else
			gateann_meta_append_node(m, id,
									 loc.block + meta->pages_per_record - m->node_start);
		if (is->become_entry)
			gateann_meta_set_entry_point(m, id);
		if (!is->tail)
		{
			gateann_meta_count_code(m, is->poor_code);
			gateann_meta_cover_record_error(m, is->record_error);
		}
	}
	GenericXLogFinish(state);
}

/*
 * Take a node id, a freed slot if there is one, else the next one, and
 * write the record there, then publish the node in the store.  Returns the
 * id, or InvalidNodeId when the caller must start over (the index outgrew
 * the store, or the entry point this insert meant to replace changed).
 *
 * Generic WAL takes at most 4 pages per record: a record spanning more
 * pages is written in several, the record's first pages (its header) and
 * the metapage last.  A crash in between leaves bytes in a slot that is
 * still free, or past the node count; the next insert there overwrites
 * them.
 */
static uint32
allocate_and_write(InsertState *is)
{
	Relation	index = is->index;
	GateannMetaPageData *meta = &is->meta;
	Buffer		metabuf;
	GateannMetaPageData *disk;
	uint32		id = InvalidNodeId;
	GateannRecordLoc loc;
	uint32		npages = meta->pages_per_record;
	uint32		head = Min(npages, 3);
	uint32		old_version = 0;
	bool		reused = false;
	Buffer		bufs[GATEANN_MAX_DIMS * sizeof(float) / GATEANN_PAGE_CAPACITY + 2];
	bool		is_new[lengthof(bufs)];
	Buffer		held[FREE_SLOT_READS * lengthof(bufs)];
	int			nheld = 0;
	uint32		k;

	metabuf = ReadBuffer(index, GATEANN_METAPAGE_BLKNO);
	for (;;)
	{
		uint32		unread = InvalidNodeId;

		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		disk = GateannPageGetMeta(BufferGetPage(metabuf));
		is->freeing_slots = (disk->freeing_slots != 0);
		if (is->become_entry && disk->entry_point != is->searched_entry)
		{
			/* someone else replaced the entry point: search from the new one */
			UnlockReleaseBuffer(metabuf);
			release_pins(held, nheld);
			return InvalidNodeId;
		}
		if (disk->nfree > 0)
			id = take_free_slot(is, disk, bufs, &old_version, &unread);
		if (unread == InvalidNodeId || nheld + npages > lengthof(held))
			break;
		/* read the candidate's pages with no lock held, pinned till we are done */
		LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
		loc = gateann_record_location(meta, unread);
		for (k = 0; k < npages; k++)
			held[nheld++] = ReadBuffer(index, loc.block + k);
		CHECK_FOR_INTERRUPTS();
	}
	/* (candidates still unread after a few rounds: extend instead, as if none were free) */
	if (id != InvalidNodeId)
	{
		reused = true;
		memset(is_new, 0, sizeof(is_new));
	}
	else
	{
		id = disk->nnodes;
		if (id >= GATEANN_MAX_NODES)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("gateann indexes at most %u vectors", GATEANN_MAX_NODES)));
		if (id >= is->store->capacity)
		{
			/* outgrown since the store was fetched: the caller retries */
			UnlockReleaseBuffer(metabuf);
			release_pins(held, nheld);
			return InvalidNodeId;
		}
		loc = gateann_record_location(meta, id);
		for (k = 0; k < npages; k++)
			bufs[k] = node_block(index, loc.block + k, &is_new[k]);
	}
	loc = gateann_record_location(meta, id);
	GateannRecordHeader(is->record)->node_id = id;
	GateannRecordHeader(is->record)->version = old_version + 1;
	gateann_record_seal(meta, is->record);

	for (k = head; k < npages; k += 3)
		write_record_pages(is, loc, bufs, is_new, k, Min(npages - k, 3),
						   InvalidBuffer, id, reused);
	write_record_pages(is, loc, bufs, is_new, 0, head, metabuf, id, reused);

	/* the store, while the pages are locked: see the file comment */
	gateann_store_put_node(is->store, meta, id, is->record, &is->filter_codes);
	gateann_store_set_neighbors(is->store, id, GateannRecordNeighbors(meta, is->record),
								GateannRecordHeader(is->record)->nneighbors);
	for (k = 0; k < npages; k++)
		gateann_store_page_changed(is->store, meta, bufs[k]);
	if (reused)
		gateann_store_clear_deleted(is->store, id);
	if (is->tail)
		gateann_store_set_tail(is->store, id);
	else
		gateann_store_set_present(is->store, id);
	for (k = 0; k < npages; k++)
		UnlockReleaseBuffer(bufs[k]);
	UnlockReleaseBuffer(metabuf);
	release_pins(held, nheld);
	return id;
}

/*
 * Neighbors of the new node whose records carry one of `flags` now: drop
 * them from its list.  With GATEANN_NODE_DELETED, those VACUUM deleted
 * while it searched.  (VACUUM repairs every list that points to a deleted
 * node before it frees the node's slot, and marks nodes deleted before
 * that.  The new record was written before these flags are read, and page
 * locks order both sides, so a list VACUUM's repair pass did not see is
 * cleaned here: no live node ever points to a freed slot.)  A new entry
 * point keeps its deleted neighbors and drops only the freed ones (a VACUUM
 * that freed slots before it took its id and was done by then).  Returns
 * the list's new length; nbrs is filtered in place.
 */
static int
drop_flagged_neighbors(InsertState *is, uint32 id, uint32 *nbrs, int nn, uint16 flags)
{
	const GateannMetaPageData *meta = &is->meta;
	uint32		list[GATEANN_MAX_NEIGHBORS_LIMIT];
	uint32		gone[GATEANN_MAX_NEIGHBORS_LIMIT];
	int			ngone = 0;
	int			n,
				kept,
				i,
				k;
	GateannNodeHeader hdr;
	GateannRecordEdit ed;

	for (i = 0; i < nn; i++)
	{
		gateann_read_header(is->index, meta, nbrs[i], &hdr);
		if (hdr.flags & flags)
			gone[ngone++] = nbrs[i];
	}
	if (ngone == 0)
		return nn;

	gateann_record_lock(is->index, meta, id, &ed);
	n = gateann_record_get_list(meta, &ed, &hdr, list);
	for (i = 0, kept = 0; i < n; i++)
	{
		for (k = 0; k < ngone && gone[k] != list[i]; k++)
			;
		if (k == ngone)
			list[kept++] = list[i];
	}
	gateann_store_write_list(is->store, meta, is->index, &ed, id, hdr.flags, list, kept);
	gateann_record_unlock(&ed);

	for (i = 0, kept = 0; i < nn; i++)
	{
		for (k = 0; k < ngone && gone[k] != nbrs[i]; k++)
			;
		if (k == ngone)
			nbrs[kept++] = nbrs[i];
	}
	return kept;
}

/* ---- 5. reverse edges --------------------------------------------------- */

static int
cmp_exp_by_id(const void *a, const void *b, void *arg)
{
	const Expanded *exp = (const Expanded *) arg;
	uint32		ia = exp[*(const uint32 *) a].id;
	uint32		ib = exp[*(const uint32 *) b].id;

	return (ia > ib) - (ia < ib);
}

/*
 * Exact vector of node id into out: from the search's expanded set (looked
 * up by binary search: every reverse-edge prune asks for up to R of them),
 * or its record (read into recbuf).  False when its slot holds another node.
 */
static bool
exact_vector(InsertState *is, uint32 id, char *recbuf, float *out)
{
	const GateannMetaPageData *meta = &is->meta;
	int			lo = 0,
				hi = is->nexp;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;
		uint32		pos = is->exp_by_id[mid];

		if (is->exp[pos].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < is->nexp && is->exp[is->exp_by_id[lo]].id == id)
	{
		memcpy(out, is->exp_vectors + (Size) is->exp_by_id[lo] * meta->dims,
			   sizeof(float) * meta->dims);
		return true;
	}
	gateann_read_record(is->index, meta, id, recbuf, NULL);
	if (GateannRecordHeader(recbuf)->node_id != id)
		return false;
	gateann_record_copy_vector(meta, recbuf, out);
	return true;
}

/*
 * j's record, read without a lock (its vector never changes), into
 * is->jvec; when its list is full, also the exact vectors of its neighbors
 * (is->known, ids in known_ids), fetched now: reading records under j's
 * page lock could wait on that very page.  Returns how many were fetched,
 * -1 if j's slot holds another node.
 */
static int
read_reverse_edge_source(InsertState *is, uint32 j, uint32 *known_ids)
{
	const GateannMetaPageData *meta = &is->meta;
	int			dims = meta->dims;
	uint32		list[GATEANN_MAX_NEIGHBORS_LIMIT];
	GateannNodeHeader hdr;
	int			deg,
				nknown = 0,
				i;

	gateann_read_record(is->index, meta, j, is->scratch, NULL);
	hdr = *GateannRecordHeader(is->scratch);
	if (hdr.node_id != j)
		return -1;				/* reported by gateann_verify; not our business */
	gateann_record_copy_vector(meta, is->scratch, is->jvec);
	deg = Min((int) hdr.nneighbors, (int) meta->max_neighbors);
	if (deg < (int) meta->max_neighbors)
		return 0;
	memcpy(list, GateannRecordNeighbors(meta, is->scratch), sizeof(uint32) * deg);
	for (i = 0; i < deg; i++)
	{
		if (exact_vector(is, list[i], is->scratch2, is->known + (Size) nknown * dims))
			known_ids[nknown++] = list[i];
	}
	return nknown;
}

/*
 * j's full list plus p, robust-pruned around j on exact vectors (those
 * read_reverse_edge_source fetched; a neighbor that joined the list since
 * is decoded from its PQ code) into newlist; nodes no longer in the store
 * are dropped.  Returns the new degree.
 */
static int
prune_full_list(InsertState *is, uint32 j, const uint32 *list, int deg, uint32 p,
				const uint32 *known_ids, int nknown, uint32 *newlist)
{
	const GateannMetaPageData *meta = &is->meta;
	int			dims = meta->dims;
	uint32		ids[GATEANN_MAX_NEIGHBORS_LIMIT + 1];
	int			n = 0,
				i,
				k;

	for (i = 0; i < deg; i++)
	{
		float	   *dst = is->decoded + (Size) n * dims;

		if (list[i] == j || !gateann_store_has(is->store, list[i]))
			continue;
		for (k = 0; k < nknown && known_ids[k] != list[i]; k++)
			;
		if (k < nknown)
			memcpy(dst, is->known + (Size) k * dims, sizeof(float) * dims);
		else
			gateann_pq_decode(&is->store->pq, gateann_store_code(is->store, list[i]), dst);
		ids[n++] = list[i];
	}
	memcpy(is->decoded + (Size) n * dims, is->vector, sizeof(float) * dims);
	ids[n++] = p;
	return gateann_graph_prune_vectors(is->jvec, is->decoded, ids, n, dims,
									   meta->alpha, meta->max_neighbors, is->r_max, newlist);
}

/*
 * What a new list takes out of j's row of the neighbor store (its first
 * r_max neighbors, all tunneling follows): j's old neighbors there that the
 * new list drops or orders further back go to is->dropped.
 */
static void
note_row_departures(InsertState *is, const uint32 *list, int deg, const uint32 *newlist,
					int newdeg, uint32 p)
{
	int			row = Min(newdeg, is->r_max);
	int			i,
				k;

	for (i = 0; i < Min(deg, is->r_max); i++)
	{
		for (k = 0; k < row && newlist[k] != list[i]; k++)
			;
		if (k == row && list[i] != p && is->ndropped < GATEANN_MAX_NEIGHBORS_LIMIT)
			is->dropped[is->ndropped++] = list[i];
	}
}

/*
 * Add the edge j -> p (p's vector is is->vector), unless j's prune drops
 * it; with `force`, p is kept anyway, within j's row of the neighbor store
 * (the first r_max of its list, all tunneling follows), where it is moved
 * if it was further back.  Neighbors that leave j's row are added to
 * is->dropped (they may have lost their last in-edge there).  Returns p's
 * position in j's list, -1 if it is not there.
 */
static int
add_reverse_edge(InsertState *is, uint32 j, uint32 p, bool force)
{
	const GateannMetaPageData *meta = &is->meta;
	int			R = meta->max_neighbors;
	uint32		list[GATEANN_MAX_NEIGHBORS_LIMIT + 1];
	uint32		newlist[GATEANN_MAX_NEIGHBORS_LIMIT];
	uint32		known_ids[GATEANN_MAX_NEIGHBORS_LIMIT];
	int			nknown;
	GateannNodeHeader hdr;
	GateannRecordEdit ed;
	int			deg,
				newdeg,
				i;
	int			at;

	if ((nknown = read_reverse_edge_source(is, j, known_ids)) < 0)
		return -1;

	gateann_record_lock(is->index, meta, j, &ed);
	deg = gateann_record_get_list(meta, &ed, &hdr, list);
	/* a node deleted meanwhile needs no new edges: VACUUM frees it */
	if (hdr.flags & GATEANN_NODE_DELETED)
	{
		gateann_record_unlock(&ed);
		return -1;
	}
	for (i = 0; i < deg && list[i] != p; i++)
		;
	if (i < deg && (!force || i < is->r_max))
	{
		gateann_record_unlock(&ed);
		return i;
	}

	if (i < deg)
	{
		/* already there, beyond the row: the force below moves it in */
		memcpy(newlist, list, sizeof(uint32) * deg);
		memmove(&newlist[i], &newlist[i + 1], sizeof(uint32) * (deg - 1 - i));
		newdeg = deg - 1;
	}
	else if (deg < R)
	{
		memcpy(newlist, list, sizeof(uint32) * deg);
		newlist[deg] = p;
		newdeg = deg + 1;
	}
	else
		newdeg = prune_full_list(is, j, list, deg, p, known_ids, nknown, newlist);
	for (at = 0; at < newdeg && newlist[at] != p; at++)
		;
	if (at == newdeg)
		at = -1;
	if (force && (at < 0 || at >= is->r_max))
	{
		/*
		 * Into the row, in the place of its last entry, which moves just
		 * behind it; a full list loses its last (what leaves the row: below).
		 */
		uint32		linked[GATEANN_MAX_NEIGHBORS_LIMIT + 1];

		newdeg = gateann_prefix_link(newlist, newdeg, R, p, is->r_max, j, NULL, 0, linked);
		memcpy(newlist, linked, sizeof(uint32) * newdeg);
		for (at = 0; newlist[at] != p; at++)
			;
	}
	note_row_departures(is, list, deg, newlist, newdeg, p);
	gateann_store_write_list(is->store, meta, is->index, &ed, j, hdr.flags, newlist, newdeg);
	gateann_record_unlock(&ed);
	return at;
}

/*
 * The neighbors reverse-edge prunes took out of their rows may have lost
 * their last in-edge a tunneling search follows (the prune cannot know);
 * each was next to a neighbor of the new node p, so p, reachable itself,
 * takes them into its own row.  When the row is full they push p's other
 * entries behind it -- nodes that were reachable before p existed; those
 * of the pushed-out nodes that p's row holds already stay in it -- but the
 * pushed-out nodes take at most half of the row, so that a walk through p
 * still goes on towards p's nearest; the rest join p's list behind the row
 * while it has room.
 */
static void
adopt_dropped(InsertState *is, uint32 p)
{
	const GateannMetaPageData *meta = &is->meta;
	uint32		list[GATEANN_MAX_NEIGHBORS_LIMIT];
	bool		was_dropped[GATEANN_MAX_NEIGHBORS_LIMIT];
	uint32		adopt[GATEANN_MAX_NEIGHBORS_LIMIT];
	uint32		pushed[GATEANN_MAX_NEIGHBORS_LIMIT];
	uint32		out[2 * GATEANN_MAX_NEIGHBORS_LIMIT];
	GateannRecordEdit ed;
	GateannNodeHeader hdr;
	int			n,
				row,
				nkept = 0,
				nadopt = 0,
				in_row,
				npush,
				npushed = 0,
				nout = 0,
				i,
				k;

	if (is->ndropped == 0)
		return;
	gateann_record_lock(is->index, meta, p, &ed);
	n = gateann_record_get_list(meta, &ed, &hdr, list);
	if (hdr.node_id != p || (hdr.flags & GATEANN_NODE_DELETED))
	{
		gateann_record_unlock(&ed);
		return;
	}
	row = Min(n, is->r_max);
	memset(was_dropped, 0, sizeof(bool) * n);
	for (i = 0; i < is->ndropped; i++)
	{
		uint32		x = is->dropped[i];

		if (x == p || !gateann_store_has(is->store, x) || gateann_store_is_deleted(is->store, x))
			continue;
		for (k = 0; k < row && list[k] != x; k++)
			;
		if (k < row)
		{
			/* in the row already: it stays there */
			if (!was_dropped[k])
				nkept++;
			was_dropped[k] = true;
			continue;
		}
		for (k = 0; k < nadopt && adopt[k] != x; k++)
			;
		if (k == nadopt)
			adopt[nadopt++] = x;
	}
	if (nadopt == 0)
	{
		gateann_record_unlock(&ed);
		return;
	}

	/* free slots of the row, else up to half of it for pushed-out nodes */
	in_row = Min(nadopt, Max(is->r_max - row, Max(is->r_max / 2, 1) - nkept));
	in_row = Max(in_row, 0);
	/* p's other entries that leave the row for them: its last ones */
	npush = Max(row + in_row - is->r_max, 0);
	for (i = row - 1; i >= 0 && npushed < npush; i--)
		if (!was_dropped[i])
			pushed[npush - 1 - npushed++] = list[i];
	for (i = 0, k = 0; i < row; i++)
	{
		if (k < npushed && list[i] == pushed[k])
		{
			k++;
			continue;
		}
		out[nout++] = list[i];
	}
	for (i = 0; i < in_row; i++)
		out[nout++] = adopt[i];
	/* behind the row: the entries pushed out, p's others, the other adopted ones */
	for (i = 0; i < npushed; i++)
		out[nout++] = pushed[i];
	for (i = row; i < n; i++)
	{
		for (k = 0; k < in_row && adopt[k] != list[i]; k++)
			;
		if (k == in_row)
			out[nout++] = list[i];
	}
	for (i = in_row; i < nadopt; i++)
	{
		for (k = row; k < n && list[k] != adopt[i]; k++)
			;
		if (k == n)
			out[nout++] = adopt[i];
	}
	nout = Min(nout, meta->max_neighbors);

	gateann_store_write_list(is->store, meta, is->index, &ed, p, hdr.flags, out, nout);
	gateann_record_unlock(&ed);
}

/* The exact distance the search found from the new vector to node id (or +inf) */
static float
expanded_distance(const InsertState *is, uint32 id)
{
	int			lo = 0,
				hi = is->nexp;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (is->exp[is->exp_by_id[mid]].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < is->nexp && is->exp[is->exp_by_id[lo]].id == id)
		return is->exp[is->exp_by_id[lo]].dist;
	return get_float4_infinity();
}

/*
 * A store loaded since this insert got its own (see the file comment):
 * copy node id's parts from its pages into is->store, the new store.
 */
static void
refresh_node(InsertState *is, uint32 id, bool whole)
{
	const GateannMetaPageData *meta = &is->meta;
	GateannRecordLoc loc = gateann_record_location(meta, id);
	GateannRecordEdit ed;
	GateannNodeHeader hdr;
	uint32		list[GATEANN_MAX_NEIGHBORS_LIMIT];
	int			n,
				i;

	if (id >= is->store->capacity)
		return;					/* a later reload picks it up from the pages */
	if (whole)
	{
		gateann_read_record(is->index, meta, id, is->scratch, NULL);
		gateann_store_set_node(is->store, is->index, meta, id, is->scratch);
		/* every page of the record, before taking the list's pages below */
		for (i = 0; i < (int) meta->pages_per_record; i++)
		{
			Buffer		buf = ReadBuffer(is->index, loc.block + i);

			LockBuffer(buf, BUFFER_LOCK_SHARE);
			gateann_store_mark_block(is->store, loc.block + i - meta->node_start,
									 BufferGetLSNAtomic(buf));
			UnlockReleaseBuffer(buf);
		}
	}
	gateann_record_lock(is->index, meta, id, &ed);
	n = gateann_record_get_list(meta, &ed, &hdr, list);
	gateann_store_set_neighbors(is->store, id, list, n);
	for (i = 0; i < ed.npages; i++)
		gateann_store_mark_block(is->store, loc.block + ed.page_index[i] - meta->node_start,
								 PageGetLSN(ed.pages[i]));
	if (whole && !(hdr.flags & GATEANN_NODE_FREE))
	{
		if (!(hdr.flags & GATEANN_NODE_DELETED))
			gateann_store_clear_deleted(is->store, id);
		if (hdr.flags & GATEANN_NODE_TAIL)
			gateann_store_set_tail(is->store, id);
		else
			gateann_store_set_present(is->store, id);
	}
	gateann_record_unlock(&ed);
}

/* ---- the steps ----------------------------------------------------------- */

/*
 * The new row's vector into is->vector (is->dims floats; unit length for
 * cosine).  Returns the tail flags of a row whose vector has no distance
 * (NULL; zero under cosine), 0 for a row that joins the graph.
 */
static uint16
read_vector(InsertState *is, Datum value, bool isnull)
{
	GateannVectorReader reader;
	int			bad;

	if (isnull)
		return GATEANN_NODE_NULL_VECTOR;
	gateann_vector_reader_init(&reader, is->index);
	is->vector = gateann_vector_from_datum(&reader, value, &is->dims);
	bad = gateann_first_unindexable(is->vector, is->dims, gateann_index_metric(is->index));
	if (bad >= 0)
		gateann_report_unindexable("vector", is->vector, bad);
	if (gateann_index_metric(is->index) == GATEANN_METRIC_COSINE &&
		!gateann_normalize(is->vector, is->dims))
		return GATEANN_NODE_NO_DIRECTION;
	return 0;
}

/*
 * Step 1: the record, as the build writes it (node id and version set when
 * the slot is taken): heap TID, vector (none for a tail record), PQ code,
 * filter copies; no neighbors yet.
 */
static void
prepare_record(InsertState *is, Datum *values, bool *isnull, ItemPointer heap_tid)
{
	const GateannMetaPageData *meta = &is->meta;
	GateannNodeHeader *hdr;
	int			i;

	is->record = palloc0(meta->record_size);
	is->scratch = palloc(meta->record_size);
	is->scratch2 = palloc(meta->record_size);
	hdr = GateannRecordHeader(is->record);
	hdr->version = 1;
	hdr->heap_tid = *heap_tid;
	hdr->flags = is->tail;
	for (i = 0; i < meta->max_neighbors; i++)
		GateannRecordNeighbors(meta, is->record)[i] = InvalidNodeId;
	if (!is->tail)
	{
		float		coarse_dist;

		if (meta->record_precision == GATEANN_PRECISION_HALF)
		{
			double		err = gateann_half_error(is->vector, meta->dims);

			if (err < 0)
				gateann_report_half_range(is->index, "vector", is->vector, meta->dims);
			is->record_error = gateann_half_error_bound(err);
		}
		gateann_record_set_vector(meta, is->record, is->vector);
		is->decoded = palloc(sizeof(float) * meta->dims * (GATEANN_MAX_NEIGHBORS_LIMIT + 1));
		(void) gateann_pq_encode(&is->store->pq, is->vector,
								 GateannRecordPQCode(meta, is->record), is->decoded,
								 &coarse_dist);
		is->poor_code = gateann_pq_code_is_poor(meta, coarse_dist);
	}
	if (meta->nfilter > 0)
	{
		GateannFilterLayout *layout = gateann_filter_layout_create(is->index);
		GateannFilterArena arena;

		gateann_filter_arena_init(&arena, layout);
		gateann_filter_arena_add(&arena, layout, values + 1, isnull + 1);
		gateann_filter_write_record(meta, &arena, 0, GateannRecordFilter(meta, is->record));
	}
}

/*
 * Steps 2 and 3: search for the new vector and choose its neighbors from
 * what the search expanded (robust prune, alpha of the build) into
 * is->nbrs and the record.  Deleted nodes route searches but get no new
 * edges.  If the search found no live node at all (the entry point and all
 * around it deleted, or no graph node yet), the new node links to the
 * deleted ones and becomes the entry point: live again, and still reaching
 * what they reach (VACUUM replaces them by their neighbors).
 */
static void
choose_neighbors(InsertState *is)
{
	const GateannMetaPageData *meta = &is->meta;
	int			dims = meta->dims;
	int			L = meta->build_search_list_size;
	int			max_exp;
	float	   *cand_vectors;
	uint32	   *cand_ids;
	int			ncand,
				i;

	/* the graph is built on L2: see graph.c */
	is->table = palloc(sizeof(float) * gateann_pq_table_floats(meta->pq_subspaces));
	gateann_pq_distance_table(&is->store->pq, is->vector, GATEANN_PQ_L2, is->table);
	is->jvec = palloc(sizeof(float) * dims);
	is->known = palloc(sizeof(float) * dims * GATEANN_MAX_NEIGHBORS_LIMIT);

	/*
	 * Where deleted nodes crowd the list (rows deleted and not yet
	 * vacuumed), the search finds few live nodes to link to, and a node
	 * with one or two neighbors is one searches hardly ever reach: search
	 * again with twice the list, up to GATEANN_INSERT_MAX_LIST_FACTOR
	 * times it, while fewer than a quarter of R live nodes were expanded
	 * and the list was full.
	 */
	for (;;)
	{
		max_exp = 2 * L + meta->max_neighbors;
		is->exp = palloc(sizeof(Expanded) * max_exp);
		is->exp_vectors = palloc(sizeof(float) * dims * (Size) max_exp);
		is->nexp = insert_search(is, L, is->exp, is->exp_vectors, max_exp);
		for (i = 0, ncand = 0; i < is->nexp; i++)
			ncand += is->exp[i].deleted ? 0 : 1;
		if (ncand >= meta->max_neighbors / 4 || is->nexp < L ||
			L >= GATEANN_INSERT_MAX_LIST_FACTOR * meta->build_search_list_size)
			break;
		pfree(is->exp);
		pfree(is->exp_vectors);
		L *= 2;
	}

	/*
	 * No live node expanded, yet the entry point is live (deleted nodes
	 * nearer the new vector pushed it out of the list): it is the one
	 * neighbor.  Becoming the entry point over deleted nodes is for when
	 * nothing live is known; its list is one only a VACUUM that has not
	 * begun to free slots repairs (gateann.h, freeing_slots).
	 */
	if (ncand == 0 && is->nexp > 0 && is->nexp < max_exp &&
		gateann_store_has(is->store, is->searched_entry) &&
		!gateann_store_is_deleted(is->store, is->searched_entry))
	{
		(void) keep_expanded(is, is->searched_entry, &is->exp[is->nexp],
							 is->exp_vectors + (Size) is->nexp * dims);
		if (!is->exp[is->nexp].deleted)
		{
			is->nexp++;
			ncand = 1;
		}
	}
	is->become_entry = (ncand == 0 &&
						(is->nexp > 0 || meta->entry_point == InvalidNodeId));
	is->exp_by_id = palloc(sizeof(uint32) * Max(is->nexp, 1));
	for (i = 0; i < is->nexp; i++)
		is->exp_by_id[i] = (uint32) i;
	qsort_arg(is->exp_by_id, is->nexp, sizeof(uint32), cmp_exp_by_id, is->exp);
	cand_vectors = palloc(sizeof(float) * dims * (Size) Max(is->nexp, 1));
	cand_ids = palloc(sizeof(uint32) * Max(is->nexp, 1));
	ncand = 0;
	for (i = 0; i < is->nexp; i++)
	{
		if (is->exp[i].deleted && !is->become_entry)
			continue;
		cand_ids[ncand] = is->exp[i].id;
		memcpy(cand_vectors + (Size) ncand * dims, is->exp_vectors + (Size) i * dims,
			   sizeof(float) * dims);
		ncand++;
	}
	is->nn = gateann_graph_prune_vectors(is->vector, cand_vectors, cand_ids, ncand, dims,
										 meta->alpha, meta->max_neighbors, is->r_max, is->nbrs);
	GateannRecordHeader(is->record)->nneighbors = (uint16) is->nn;
	memcpy(GateannRecordNeighbors(meta, is->record), is->nbrs, sizeof(uint32) * is->nn);
}

/*
 * Step 5: reverse edges.  Each neighbor's prune may drop the new node (it
 * is then in a crowded place, or far from everything: a row from a region
 * no build saw), and a list with room gets it at its end, beyond the row
 * tunneling follows; if no neighbor has it in its row, a search that
 * tunnels could not reach it, so the nearest neighbor puts it there
 * regardless.
 */
static void
link_reverse_edges(InsertState *is, uint32 id)
{
	int			linked = 0;
	int			nearest = -1;
	int			i;

	for (i = 0; i < is->nn; i++)
	{
		int			at;

		CHECK_FOR_INTERRUPTS();
		at = add_reverse_edge(is, is->nbrs[i], id, false);
		if (at >= 0 && at < is->r_max)
			linked++;
		if (nearest < 0 ||
			expanded_distance(is, is->nbrs[i]) < expanded_distance(is, is->nbrs[nearest]))
			nearest = i;
	}
	if (linked == 0 && nearest >= 0)
		(void) add_reverse_edge(is, is->nbrs[nearest], id, true);
	adopt_dropped(is, id);
}

/*
 * Steps 1-5 (a tail record: 1 and 4 only).  Returns the node id.  Starts
 * over when allocate_and_write says so (the index outgrew the store, or the
 * entry point this insert meant to replace changed).
 */
static uint32
insert_node(InsertState *is, Datum *values, bool *isnull, ItemPointer heap_tid)
{
	uint32		id;

	for (;;)
	{
		is->store = gateann_store_get(is->index, &is->meta);
		is->r_max = is->store->tunnel_neighbors;
		prepare_record(is, values, isnull, heap_tid);
		/* (coding calls type functions: not under allocate_and_write's locks) */
		gateann_store_code_filters(is->store, is->index, &is->meta, is->record,
								   &is->filter_codes);
		if (!is->tail)
			choose_neighbors(is);
		id = allocate_and_write(is);
		if (id != InvalidNodeId)
			break;
		gateann_read_meta(is->index, &is->meta);
	}
	if (is->tail)
		return id;
	/*
	 * A new entry point links to deleted nodes on purpose; a VACUUM repairs
	 * its list unless it took its id while slots were being freed.
	 */
	if (!is->become_entry || is->freeing_slots)
		is->nn = drop_flagged_neighbors(is, id, is->nbrs, is->nn,
										GATEANN_NODE_DELETED | GATEANN_NODE_FREE);
	else
		is->nn = drop_flagged_neighbors(is, id, is->nbrs, is->nn, GATEANN_NODE_FREE);
	link_reverse_edges(is, id);
	return id;
}

bool
gateann_insert(Relation index, Datum *values, bool *isnull, ItemPointer heap_tid,
			   Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
			   IndexInfo *indexInfo)
{
	MemoryContext cxt;
	MemoryContext oldcxt;
	InsertState is;
	GateannStore *reloaded;
	LOCKMODE	lockmode;
	uint64		since;
	uint32		id;
	int			i;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "gateann insert",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	memset(&is, 0, sizeof(is));
	is.index = index;
	is.tail = read_vector(&is, values[0], isnull[0]);

	/*
	 * Keep a retrain from re-encoding codes while we encode ours; the first
	 * vector of an index that has seen none sets it up (retrain.h).
	 */
	lockmode = gateann_insert_lock(index, &is.meta, is.tail ? NULL : is.vector, is.dims);
	if (is.vector != NULL && is.meta.dims > 0 && is.dims != is.meta.dims)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vector has %d dimensions, index \"%s\" has %d",
						is.dims, RelationGetRelationName(index), is.meta.dims),
				 errhint("All vectors in one gateann index must have the same number of dimensions; use a partial or expression index to separate them.")));

	/* (before the store is fetched: see gateann_store_next_reloaded) */
	since = gateann_store_clock();
	id = insert_node(&is, values, isnull, heap_tid);

	/*
	 * A store loaded since we got ours (ours evicted, or one we could not
	 * use) may have read our pages before we wrote them: copy what we
	 * changed into it.
	 */
	while ((reloaded = gateann_store_next_reloaded(index, &is.meta, is.store, &since)) != NULL)
	{
		is.store = reloaded;
		refresh_node(&is, id, true);
		for (i = 0; i < is.nn; i++)
			refresh_node(&is, is.nbrs[i], false);
	}

	gateann_insert_unlock(index, lockmode);

	/* this row may be the one that makes the codebook due for retraining */
	if (lockmode != NoLock && !is.tail)
		gateann_retrain_if_due(index, false);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return false;
}
