/*
 * vacuum.c — ambulkdelete / amvacuumcleanup.
 *
 * Bulk delete marks the records of dead heap tuples deleted (generic WAL,
 * one record per modified page): from then on scans never return them, but
 * they keep their place in the graph and still route searches.
 *
 * Cleanup then consolidates (FreshDiskANN's delete phase) and frees their
 * slots for inserts to reuse:
 *
 *   1. one pass over the records collects the deleted nodes, their
 *      neighbor lists, and the slots already free;
 *   2. if the entry point is deleted, the live node nearest to it (by PQ
 *      distance) becomes the entry point; the old one stays deleted, not
 *      freed, until the next VACUUM (a scan may have just started from it);
 *   3. every other node whose list points to a node being freed gets a new
 *      list: its other neighbors plus the freed nodes' neighbors, robust
 *      pruned (alpha of the build) on PQ-decoded vectors around its exact
 *      vector and ordered for tunneling, like every list;
 *   4. each deleted node's slot is marked free (no neighbors) together with
 *      the metapage's counts, and leaves the store;
 *   5. a walk from the entry point over the neighbor store finds live nodes
 *      no search could reach any more (whole regions deleted around them)
 *      and links each from a reached node near it.
 *
 * Only page locks are held, one record at a time (the metapage first in
 * step 4, in the order inserts take them), so queries and inserts go on.
 * An insert whose search read a node before it was deleted drops the edge
 * itself (insert.c, drop_flagged_neighbors).  Steps 3 and 4 run with the
 * metapage's freeing_slots set, and step 3 covers the nodes there were when
 * it was set: an insert that takes its id after that drops every edge to a
 * deleted node, even as a new entry point (gateann.h).  Step 5 walks the
 * nodes appended meanwhile too.
 */
#include "postgres.h"

#include "gateann.h"
#include "distance.h"
#include "graph.h"
#include "meta.h"
#include "page.h"
#include "repair.h"
#include "reach.h"
#include "search.h"
#include "retrain.h"
#include "pq.h"
#include "store.h"

#include "access/generic_xlog.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/float.h"
#include "utils/memutils.h"
#include "utils/rel.h"

static void
add_deleted_to_meta(Relation index, uint32 ndeleted)
{
	GateannMetaUpdate u;
	gateann_meta_add_deleted(gateann_meta_update_begin(index, &u, false), ndeleted);
	gateann_meta_update_finish(&u);
}

IndexBulkDeleteResult *
gateann_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				   IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	GateannMetaPageData meta;
	BlockNumber blkno;
	BlockNumber end;
	uint32		id = 0;
	uint32		newly_deleted = 0;
	double		live = 0;
	LOCKMODE	lockmode = NoLock;

	GateannStore *store = NULL;
	bool		shared;
	Size		bytes;
	uint64		since;

	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));

	/*
	 * An index that has seen no vector yet is laid out again by its first
	 * one, which copies the tail records it holds (retrain.c, bootstrap):
	 * hold that off while flags are set here, or a record copied before its
	 * flag was set would keep a heap TID this VACUUM frees.
	 */
	gateann_read_meta(index, &meta);
	if (meta.dims == 0)
	{
		lockmode = ShareLock;
		LockPage(index, GATEANN_METAPAGE_BLKNO, lockmode);
		gateann_read_meta(index, &meta);
	}
	/* scans skip deleted nodes' reads: tell a loaded store (never load one) */
	since = gateann_store_clock();
	if (gateann_store_loaded(index, &meta, &shared, &bytes))
		store = gateann_store_get(index, &meta);
	end = meta.node_start + meta.node_pages;
	for (blkno = meta.node_start; blkno < end && id < meta.nnodes; blkno++)
	{
		Buffer		buf;
		Page		page;
		GenericXLogState *state = NULL;
		uint32		nrec;
		uint32		slot;

		gateann_vacuum_delay_point();
		if (meta.records_per_page == 0 &&
			(blkno - meta.node_start) % meta.pages_per_record != 0)
			continue;

		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, info->strategy);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		page = BufferGetPage(buf);
		nrec = meta.records_per_page > 0 ? meta.records_per_page : 1;
		for (slot = 0; slot < nrec && id < meta.nnodes; slot++, id++)
		{
			GateannNodeHeader *hdr = (GateannNodeHeader *)
				(PageGetContents(page) + slot * meta.record_size);

			if (hdr->flags & GATEANN_NODE_DELETED)
				continue;
			if (callback(&hdr->heap_tid, callback_state))
			{
				if (state == NULL)
				{
					state = GenericXLogStart(index);
					page = GenericXLogRegisterBuffer(state, buf, 0);
					hdr = (GateannNodeHeader *)
						(PageGetContents(page) + slot * meta.record_size);
				}
				hdr->flags |= GATEANN_NODE_DELETED;
				if (store != NULL)
					gateann_store_set_deleted(store, id);
				newly_deleted++;
				stats->tuples_removed += 1;
			}
			else
				live += 1;
		}
		if (state != NULL)
			GenericXLogFinish(state);
		UnlockReleaseBuffer(buf);
	}

	if (newly_deleted > 0)
	{
		add_deleted_to_meta(index, newly_deleted);

		/*
		 * Scans read node pages from the file, bypassing shared buffers:
		 * write the deleted flags out before VACUUM goes on to free the
		 * heap TIDs, so no scan can return a TID that gets reused.
		 */
		FlushRelationBuffers(index);
	}
	/* a store loaded meanwhile may have read pages from before these changes */
	gateann_store_forget_reloaded_since(index, since, store);
	if (lockmode != NoLock)
		UnlockPage(index, GATEANN_METAPAGE_BLKNO, lockmode);

	stats->num_pages = RelationGetNumberOfBlocks(index);
	stats->num_index_tuples = live;
	stats->estimated_count = false;
	return stats;
}

/* ---- consolidation -------------------------------------------------------- */

typedef struct Consolidation
{
	Relation	index;
	GateannMetaPageData meta;
	GateannStore *store;
	BufferAccessStrategy strategy;
	char	   *rec;
	char	   *cand_rec;		/* a candidate's record */
	bool		locked;			/* a record is locked: read no others */
	uint8	   *free_map;		/* slots already free */
	uint8	   *doomed_map;		/* deleted nodes whose slots this pass frees */
	uint32	   *doomed;			/* their ids, ascending */
	uint32		ndoomed;
	uint32	   *doomed_lists;	/* R per doomed node */
	uint16	   *doomed_len;
	uint32		kept_entry;		/* a deleted entry point not freed, or invalid */
	int64		repaired;
	int64		relinked;
	uint32		map_nodes;		/* nodes the maps cover */
	uint32		stamp_nodes;	/* nodes the stamps cover: at least meta.nnodes */
	uint32	   *stamp;			/* per node: last repair that saw it */
	uint32		stamp_now;
	MemoryContext node_cxt;		/* reset for every repaired list */
	float	   *vecbuf;			/* a record's vector decoded (dims floats) */
} Consolidation;

#define MAP_TEST(map, id)	(((map)[(id) >> 3] & (1 << ((id) & 7))) != 0)
#define MAP_SET(map, id)	((map)[(id) >> 3] |= (1 << ((id) & 7)))

static int
cmp_uint32(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return (x > y) - (x < y);
}

/*
 * Is id no node a list may keep: one this pass frees, or a slot that was
 * free when the pass began and still is?  Nodes inserted since (ids past
 * the node count read at the start, or free slots taken again) are live,
 * whether or not the store we hold has them (it may be one a newer load
 * replaced).  Under a record lock no other record is read: a free slot
 * then counts as gone unless the store shows it taken.
 */
static bool
gone(const Consolidation *c, uint32 id)
{
	GateannNodeHeader hdr;

	if (id >= c->map_nodes)
		return false;
	if (MAP_TEST(c->doomed_map, id))
		return true;
	if (!MAP_TEST(c->free_map, id))
		return false;
	if (gateann_store_has(c->store, id))
		return false;
	if (c->locked)
		return true;
	gateann_read_header(c->index, &c->meta, id, &hdr);
	return hdr.node_id != id || (hdr.flags & GATEANN_NODE_FREE) != 0;
}

/* Does a list point to a slot that is (being) freed? */
static bool
needs_repair(const Consolidation *c, const uint32 *list, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		if (gone(c, list[i]))
			return true;
	return false;
}

/* Position of a doomed id in c->doomed */
static int
doomed_position(const Consolidation *c, uint32 id)
{
	uint32	   *hit = bsearch(&id, c->doomed, c->ndoomed, sizeof(uint32), cmp_uint32);

	return hit ? (int) (hit - c->doomed) : -1;
}

/* Has id been seen for the current node?  (stamps avoid clearing a set) */
static inline bool
seen_test_and_set(Consolidation *c, uint32 id)
{
	Assert(id < c->stamp_nodes);
	if (c->stamp[id] == c->stamp_now)
		return true;
	c->stamp[id] = c->stamp_now;
	return false;
}

/*
 * The repaired list of node p (exact vector pvec, current list `list`):
 * its neighbors that stay, plus the neighbors of those that go, robust
 * pruned around p (ordered for tunneling).  Where whole regions were
 * deleted, the freed nodes' neighbors may all be freed too: then the walk
 * goes on through freed nodes (breadth first, at most 2R of them) until R
 * live candidates are found, so that p keeps its way across the gap.
 * Returns the list's length.
 */
static int
repair_list(Consolidation *c, uint32 p, const float *pvec, const uint32 *list, int n,
			uint32 *out)
{
	const GateannMetaPageData *meta = &c->meta;
	int			R = meta->max_neighbors;
	int			dims = meta->dims;
	uint32	   *ids = palloc(sizeof(uint32) * ((Size) 2 * R + 1) * (R + 1));
	uint32	   *queue = palloc(sizeof(uint32) * ((Size) 2 * R + 1) * (R + 1));
	int			nids = 0;
	int			qhead = 0,
				qtail = 0;
	int			direct;
	int			nstay;
	int			i,
				j;
	float	   *dist;
	int		   *picked;
	float	   *vectors;
	float	   *chosen;
	uint32	   *cand_ids;
	int			ncand;

	if (++c->stamp_now == 0)
	{
		memset(c->stamp, 0, sizeof(uint32) * (Size) c->stamp_nodes);
		c->stamp_now = 1;
	}
	(void) seen_test_and_set(c, p);

	/* the neighbors that stay come first, in their order */
	for (i = 0; i < n; i++)
	{
		/* a node inserted since the pass began (no stamp for it): it stays */
		if (list[i] >= meta->nnodes && list[i] != InvalidNodeId)
		{
			ids[nids++] = list[i];
			continue;
		}
		if (list[i] >= meta->nnodes || seen_test_and_set(c, list[i]))
			continue;
		if (MAP_TEST(c->doomed_map, list[i]))
			queue[qtail++] = list[i];
		else if (!gone(c, list[i]))
			ids[nids++] = list[i];
	}
	direct = qtail;
	nstay = nids;
	while (qhead < qtail && (qhead < direct || (nids < R && qhead < 2 * R)))
	{
		int			pos = doomed_position(c, queue[qhead++]);

		if (pos < 0)
			continue;
		for (j = 0; j < c->doomed_len[pos]; j++)
		{
			uint32		y = c->doomed_lists[(Size) pos * R + j];

			if (y >= meta->nnodes || seen_test_and_set(c, y))
				continue;
			if (MAP_TEST(c->doomed_map, y))
			{
				if (qtail < 2 * R + 1)
					queue[qtail++] = y;
			}
			else if (!gone(c, y))
				ids[nids++] = y;
		}
	}
	if (nids == 0)
		return 0;

	/*
	 * Robust prune of the candidates (repair.h), even when they would fit: the
	 * prune also orders the list so that its first R_max (the neighbor
	 * store's row, all that tunneling sees) are a navigable subset.
	 * Appending the replacements after the neighbors that stay would leave
	 * them out of the row, and filtered searches could not cross the gap.
	 */
	dist = palloc(sizeof(float) * nids);
	vectors = palloc(sizeof(float) * dims * (Size) nids);
	for (i = 0; i < nids; i++)
	{
		float	   *v = vectors + (Size) i * dims;

		/*
		 * Exact vectors from the records (through shared buffers) when no
		 * page lock is held; PQ-decoded ones otherwise (a candidate may
		 * live on the page we hold).
		 */
		if (!c->locked)
			gateann_read_record(c->index, meta, ids[i], c->cand_rec, c->strategy);
		if (!c->locked && GateannRecordHeader(c->cand_rec)->node_id == ids[i])
			gateann_record_copy_vector(meta, c->cand_rec, v);
		else if (gateann_store_has(c->store, ids[i]))
			gateann_pq_decode(&c->store->pq, gateann_store_code(c->store, ids[i]), v);
		else
		{
			/* no vector to hand (a node newer than our store): last choice */
			memcpy(v, pvec, sizeof(float) * dims);
			dist[i] = get_float4_infinity();
			continue;
		}
		dist[i] = gateann_l2sq(pvec, v, dims);
	}
	/* all that stay and the closest replacements (repair.h) */
	picked = palloc(sizeof(int) * nids);
	ncand = gateann_repair_choose(dist, nstay, nids, R,
								  palloc(sizeof(GateannRepairCandidate) * nids), picked);
	cand_ids = palloc(sizeof(uint32) * ncand);
	chosen = palloc(sizeof(float) * dims * (Size) ncand);
	for (i = 0; i < ncand; i++)
	{
		memcpy(chosen + (Size) i * dims, vectors + (Size) picked[i] * dims,
			   sizeof(float) * dims);
		cand_ids[i] = ids[picked[i]];
	}
	return gateann_graph_prune_vectors(pvec, chosen, cand_ids, ncand, dims,
									   meta->alpha, R, c->store->tunnel_neighbors, out);
}

/* Step 1: deleted nodes, their lists, free slots. */
static void
collect_deleted(Consolidation *c)
{
	const GateannMetaPageData *meta = &c->meta;
	int			R = meta->max_neighbors;
	uint32		cap = Max(meta->ndeleted, 16);
	uint32		id;

	c->free_map = palloc0((meta->nnodes + 7) / 8);
	c->doomed_map = palloc0((meta->nnodes + 7) / 8);
	c->doomed = palloc(sizeof(uint32) * cap);
	c->doomed_len = palloc(sizeof(uint16) * cap);
	c->doomed_lists = MemoryContextAllocHuge(CurrentMemoryContext,
											 sizeof(uint32) * (Size) cap * R);
	c->ndoomed = 0;
	for (id = 0; id < meta->nnodes; id++)
	{
		GateannNodeHeader hdr;

		if ((id & 7) == 0)
			gateann_vacuum_delay_point();
		/* the header tells; only deleted nodes' lists are needed */
		gateann_read_header(c->index, meta, id, &hdr);
		if (hdr.node_id != id)
			continue;			/* gateann_verify reports it */
		if (hdr.flags & GATEANN_NODE_FREE)
		{
			MAP_SET(c->free_map, id);
			continue;
		}
		if (!(hdr.flags & GATEANN_NODE_DELETED) || id == c->kept_entry)
			continue;
		gateann_read_record(c->index, meta, id, c->rec, c->strategy);
		if (GateannRecordHeader(c->rec)->node_id != id)
			continue;
		if (c->ndoomed == cap)
		{
			cap *= 2;
			c->doomed = repalloc(c->doomed, sizeof(uint32) * cap);
			c->doomed_len = repalloc(c->doomed_len, sizeof(uint16) * cap);
			c->doomed_lists = repalloc_huge(c->doomed_lists, sizeof(uint32) * (Size) cap * R);
		}
		MAP_SET(c->doomed_map, id);
		c->doomed[c->ndoomed] = id;
		c->doomed_len[c->ndoomed] =
			(uint16) Min((int) GateannRecordHeader(c->rec)->nneighbors, R);
		memcpy(c->doomed_lists + (Size) c->ndoomed * R, GateannRecordNeighbors(meta, c->rec),
			   sizeof(uint32) * c->doomed_len[c->ndoomed]);
		c->ndoomed++;
	}
}

/* Keep id in *best if it is a live node nearer (PQ distance table) than *best */
static inline void
nearer_live(const Consolidation *c, const float *table, uint32 id, uint32 *best,
			float *best_dist)
{
	float		d;

	if (id >= c->meta.nnodes || !gateann_store_has(c->store, id) ||
		gateann_store_is_deleted(c->store, id))
		return;
	d = gateann_pq_code_distance(table, gateann_store_code(c->store, id),
								 c->meta.pq_subspaces);
	if (d < *best_dist)
	{
		*best_dist = d;
		*best = id;
	}
}

/*
 * Step 2: a deleted entry point is replaced by the live node closest to it
 * (PQ distances to its exact vector).  Returns false if there is no live
 * node (then nothing is freed: the next insert becomes the entry point).
 */
static bool
replace_entry_point(Consolidation *c)
{
	GateannMetaPageData *meta = &c->meta;
	uint32		entry = meta->entry_point;
	GateannNodeHeader hdr;
	float	   *table;
	uint32		best = InvalidNodeId;
	float		best_dist = get_float4_infinity();
	uint32		id;
	GateannMetaUpdate u;
	GateannMetaPageData *m;

	c->kept_entry = InvalidNodeId;
	if (entry >= meta->nnodes)
		return true;
	gateann_read_header(c->index, meta, entry, &hdr);
	if (!(hdr.flags & GATEANN_NODE_DELETED))
		return true;

	gateann_read_record(c->index, meta, entry, c->rec, c->strategy);
	table = palloc(sizeof(float) * gateann_pq_table_floats(meta->pq_subspaces));
	gateann_pq_distance_table(&c->store->pq, gateann_record_vector(meta, c->rec, c->vecbuf),
							  GATEANN_PQ_L2, table);
	for (id = 0; id < meta->nnodes; id++)
		nearer_live(c, table, id, &best, &best_dist);
	pfree(table);
	c->kept_entry = entry;
	if (best == InvalidNodeId)
		return false;

	m = gateann_meta_update_begin(c->index, &u, false);
	/* (an insert may have replaced it meanwhile: then keep that one) */
	if (m->entry_point == entry)
		gateann_meta_set_entry_point(m, best);
	meta->entry_point = m->entry_point;
	gateann_meta_update_finish(&u);
	return true;
}

/*
 * Step 2b: every other deleted entry point is replaced by the live node
 * nearest it (PQ distances to its exact vector) within two steps of it over
 * the neighbor store's rows, or dropped if there is none; searches must
 * not start from slots about to be freed and reused.
 */
static void
replace_deleted_entries(Consolidation *c)
{
	GateannMetaPageData *meta = &c->meta;
	uint32		entries[GATEANN_MAX_ENTRIES];
	int			n = 0;
	bool		changed = false;
	float	   *table = palloc(sizeof(float) * gateann_pq_table_floats(meta->pq_subspaces));
	uint32	   *row = palloc(sizeof(uint32) * (c->store->tunnel_neighbors + 1));
	uint32	   *row2 = palloc(sizeof(uint32) * (c->store->tunnel_neighbors + 1));
	uint32		i;
	GateannMetaUpdate u;
	GateannMetaPageData *m;

	for (i = 0; i < meta->nentries && i < GATEANN_MAX_ENTRIES; i++)
	{
		uint32		e = meta->entries[i];
		GateannNodeHeader hdr;
		uint32		best = InvalidNodeId;
		float		best_dist = get_float4_infinity();
		int			n1,
					k,
					j;

		if (i == 0 || e >= meta->nnodes)
		{
			entries[n++] = (i == 0) ? meta->entry_point : e;
			continue;
		}
		gateann_read_header(c->index, meta, e, &hdr);
		if (hdr.node_id == e && !(hdr.flags & (GATEANN_NODE_DELETED | GATEANN_NODE_FREE)))
		{
			entries[n++] = e;
			continue;
		}
		changed = true;
		if (hdr.node_id != e || (hdr.flags & GATEANN_NODE_FREE))
			continue;
		gateann_read_record(c->index, meta, e, c->rec, c->strategy);
		gateann_pq_distance_table(&c->store->pq,
								  gateann_record_vector(meta, c->rec, c->vecbuf),
								  GATEANN_PQ_L2, table);
		n1 = gateann_store_copy_neighbors(c->store, e, row);
		for (k = -1; k < n1; k++)
		{
			int			n2;

			/* k = -1: e's own neighbors; then each neighbor's */
			if (k < 0)
			{
				memcpy(row2, row, sizeof(uint32) * n1);
				n2 = n1;
			}
			else if (gateann_store_has(c->store, row[k]))
				n2 = gateann_store_copy_neighbors(c->store, row[k], row2);
			else
				continue;
			for (j = 0; j < n2; j++)
				nearer_live(c, table, row2[j], &best, &best_dist);
		}
		for (k = 0; k < n && best != InvalidNodeId; k++)
			if (entries[k] == best)
				best = InvalidNodeId;	/* already an entry point */
		if (best != InvalidNodeId)
			entries[n++] = best;
	}
	pfree(table);
	pfree(row);
	pfree(row2);
	if (!changed)
		return;

	m = gateann_meta_update_begin(c->index, &u, false);
	/* (entries[0] follows entry_point, which an insert may have changed meanwhile) */
	gateann_meta_set_entries(m, entries, n);
	memcpy(meta->entries, m->entries, sizeof(uint32) * n);
	meta->nentries = n;
	gateann_meta_update_finish(&u);
}

/* Step 3: repair every list that points to a slot being (or already) freed. */
static void
repair_lists(Consolidation *c)
{
	const GateannMetaPageData *meta = &c->meta;
	uint32		list[GATEANN_MAX_NEIGHBORS_LIMIT];
	uint32		newlist[GATEANN_MAX_NEIGHBORS_LIMIT];
	float	   *pvec = palloc(sizeof(float) * meta->dims);
	uint32		id;

	for (id = 0; id < meta->nnodes; id++)
	{
		GateannNodeHeader *rhdr = GateannRecordHeader(c->rec);
		GateannNodeHeader hdr;
		GateannRecordEdit ed;
		MemoryContext oldcxt;
		int			n,
					nn,
					attempt;

		if ((id & 7) == 0)
			gateann_vacuum_delay_point();
		if (MAP_TEST(c->free_map, id) || MAP_TEST(c->doomed_map, id))
			continue;
		gateann_read_record(c->index, meta, id, c->rec, c->strategy);
		n = Min((int) rhdr->nneighbors, meta->max_neighbors);
		if (rhdr->node_id != id || (rhdr->flags & GATEANN_NODE_FREE) ||
			!needs_repair(c, GateannRecordNeighbors(meta, c->rec), n))
			continue;
		gateann_record_copy_vector(meta, c->rec, pvec);

		/*
		 * The new list is computed from the list as read, without locks
		 * (exact vectors of the candidates are read meanwhile); under the
		 * lock it is written if the list is still the same.  If inserts
		 * changed it, it is computed again from the new list, unlocked;
		 * after three tries, only what is gone is dropped from it, under
		 * the lock.
		 */
		oldcxt = MemoryContextSwitchTo(c->node_cxt);
		memcpy(list, GateannRecordNeighbors(meta, c->rec), sizeof(uint32) * n);
		for (attempt = 0;; attempt++)
		{
			uint32		now[GATEANN_MAX_NEIGHBORS_LIMIT];
			int			nnow;

			nn = repair_list(c, id, pvec, list, n, newlist);
			gateann_record_lock(c->index, meta, id, &ed);
			c->locked = true;
			nnow = gateann_record_get_list(meta, &ed, &hdr, now);
			if (hdr.node_id != id || (hdr.flags & GATEANN_NODE_FREE) ||
				!needs_repair(c, now, nnow))
			{
				nn = -1;		/* nothing to do any more */
				break;
			}
			if (nnow == n && memcmp(now, list, sizeof(uint32) * n) == 0)
				break;			/* unchanged: write what we computed */
			if (attempt == 2)
			{
				/*
				 * Inserts keep changing it: just drop what is gone, under
				 * the lock (no other record can be read here).
				 */
				int			k;

				nn = 0;
				for (k = 0; k < nnow; k++)
					if (!gone(c, now[k]))
						newlist[nn++] = now[k];
				break;
			}
			/* inserts changed it meanwhile: compute again, unlocked */
			gateann_record_unlock(&ed);
			c->locked = false;
			memcpy(list, now, sizeof(uint32) * nnow);
			n = nnow;
		}
		if (nn < 0)
		{
			gateann_record_unlock(&ed);
			c->locked = false;
			MemoryContextSwitchTo(oldcxt);
			MemoryContextReset(c->node_cxt);
			continue;
		}
		gateann_store_write_list(c->store, meta, c->index, &ed, id, hdr.flags, newlist, nn);
		gateann_record_unlock(&ed);
		c->locked = false;
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(c->node_cxt);
		c->repaired++;
	}
	pfree(pvec);
}

/* Step 4: free the doomed slots, counting them in the metapage. */
static void
free_slots(Consolidation *c)
{
	const GateannMetaPageData *meta = &c->meta;
	uint32		i;

	for (i = 0; i < c->ndoomed; i++)
	{
		uint32		id = c->doomed[i];
		Buffer		metabuf;
		GateannRecordEdit ed;
		GateannNodeHeader hdr;
		uint32		list[GATEANN_MAX_NEIGHBORS_LIMIT];
		GateannMetaPageData *m;

		if ((i & 7) == 0)
			gateann_vacuum_delay_point();
		metabuf = ReadBuffer(c->index, GATEANN_METAPAGE_BLKNO);
		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		gateann_record_lock(c->index, meta, id, &ed);
		(void) gateann_record_get_list(meta, &ed, &hdr, list);
		if (hdr.node_id == id && (hdr.flags & GATEANN_NODE_DELETED) &&
			!(hdr.flags & GATEANN_NODE_FREE))
		{
			m = GateannPageGetMeta(gateann_record_begin_change(c->index, &ed, metabuf));
			gateann_record_put_list(meta, &ed, hdr.flags | GATEANN_NODE_FREE, list, 0);
			gateann_meta_free_slot(m, id);
			gateann_store_edit_finish(c->store, &c->meta, &ed);
			gateann_store_set_free(c->store, id);
		}
		gateann_record_unlock(&ed);
		UnlockReleaseBuffer(metabuf);
	}
}

/* ---- step 5: reachability ------------------------------------------------- */

/*
 * Every live node must stay reachable from the entry points over the
 * neighbor store's rows (each a prefix of its node's list: what tunneling
 * follows).  When whole regions are deleted, the repaired lists around them
 * may no longer lead into what is left behind them, and inserts' reverse
 * edges can take a node's last way in too.  reach.c's repair links each node
 * its walk missed from reached nodes near it; this is its view of the index:
 * rows read from the store, links written to the records (and their rows).
 */
typedef struct Relink
{
	Consolidation *c;
	uint64		since;			/* the store's load clock (relink_go_on) */
	bool		stopped;		/* our store was replaced meanwhile */
	int			L;				/* list of the search for near nodes */
	float	   *table;			/* PQ distance table of that search */
	const uint8 *reached;		/* the repair's walk, while near_reached runs */
	uint32	   *row;
} Relink;

static int
relink_prefix(void *arg, uint32 id, uint32 *out, int max)
{
	Relink	   *rl = arg;

	return gateann_store_row_neighbors(rl->c->store, id, out, max);
}

/* An expansion of near_reached: the row's reached nodes not met yet, with PQ distances */
static int
expand_near(void *arg, uint32_t id, float dist, uint32_t *ids, float *dists)
{
	Relink	   *rl = arg;
	Consolidation *c = rl->c;
	int			n = gateann_store_copy_neighbors(c->store, id, rl->row),
				k,
				out = 0;

	for (k = 0; k < n; k++)
	{
		uint32		nb = rl->row[k];

		if (nb >= c->meta.nnodes || !MAP_TEST(rl->reached, nb) || seen_test_and_set(c, nb))
			continue;
		ids[out] = nb;
		dists[out++] = gateann_pq_code_distance(rl->table, gateann_store_code(c->store, nb),
												c->meta.pq_subspaces);
	}
	return out;
}

/*
 * Live nodes near u that searches reach, nearest first (an in-memory
 * greedy search from the entry point over PQ codes and rows: search.c's
 * walk, on u's vector read through shared buffers).  Negative when u is not
 * a live node.
 */
static int
near_reached(void *arg, uint32 u, const uint8 *reached, uint32 *out, int max)
{
	Relink	   *rl = arg;
	Consolidation *c = rl->c;
	const GateannMetaPageData *meta = &c->meta;
	int			L = Min(rl->L, max);
	GateannCandidate *list;
	int			rowmax = Max(c->store->tunnel_neighbors, 1);
	uint32	   *ids;
	float	   *dists;
	int			size = 0;
	int			nout = 0;
	int			i;
	uint32		entry = meta->entry_point;

	if (!gateann_store_has(c->store, u) || gateann_store_is_deleted(c->store, u))
		return -1;
	gateann_read_record(c->index, meta, u, c->rec, c->strategy);
	if (GateannRecordHeader(c->rec)->node_id != u ||
		(GateannRecordHeader(c->rec)->flags & GATEANN_NODE_DELETED))
		return -1;
	if (entry >= meta->nnodes || !MAP_TEST(reached, entry))
		return 0;
	gateann_pq_distance_table(&c->store->pq, gateann_record_vector(meta, c->rec, c->vecbuf),
							  GATEANN_PQ_L2, rl->table);
	if (++c->stamp_now == 0)
	{
		memset(c->stamp, 0, sizeof(uint32) * (Size) c->stamp_nodes);
		c->stamp_now = 1;
	}
	list = palloc(sizeof(GateannCandidate) * (L + 1));
	ids = palloc(sizeof(uint32) * rowmax);
	dists = palloc(sizeof(float) * rowmax);
	(void) seen_test_and_set(c, entry);
	gateann_candidate_insert(list, &size, L, entry,
							 gateann_pq_code_distance(rl->table,
													  gateann_store_code(c->store, entry),
													  meta->pq_subspaces));
	rl->reached = reached;
	size = gateann_best_first(list, size, L, -1, expand_near, NULL, rl, ids, dists);
	rl->reached = NULL;
	for (i = 0; i < size; i++)
		if (!gateann_store_is_deleted(c->store, list[i].id))
			out[nout++] = list[i].id;
	pfree(list);
	pfree(ids);
	pfree(dists);
	return nout;
}

static int
relink_can_link(void *arg, uint32 from, int need_room)
{
	Relink	   *rl = arg;
	Consolidation *c = rl->c;
	GateannNodeHeader hdr;

	if (!gateann_store_has(c->store, from) || gateann_store_is_deleted(c->store, from))
		return 0;
	if (!need_room)
		return 1;
	gateann_read_header(c->index, &c->meta, from, &hdr);
	return hdr.nneighbors < c->meta.max_neighbors;
}

/*
 * Add the edge from -> to within the first tunnel_neighbors of from's list
 * (its row); who leaves a full prefix: gateann_prefix_link.
 */
static void
relink_link(void *arg, uint32 from, uint32 to, const uint32 *parent, uint32 parent_len)
{
	Relink	   *rl = arg;
	Consolidation *c = rl->c;
	const GateannMetaPageData *meta = &c->meta;
	uint32		list[GATEANN_MAX_NEIGHBORS_LIMIT];
	uint32		out[GATEANN_MAX_NEIGHBORS_LIMIT + 1];
	GateannRecordEdit ed;
	GateannNodeHeader hdr;
	int			n;

	gateann_record_lock(c->index, meta, from, &ed);
	n = gateann_record_get_list(meta, &ed, &hdr, list);
	if (!(hdr.flags & GATEANN_NODE_FREE) &&
		(n = gateann_prefix_link(list, n, meta->max_neighbors, to,
								 Max(c->store->tunnel_neighbors, 1), from, parent, parent_len,
								 out)) >= 0)
		gateann_store_write_list(c->store, meta, c->index, &ed, from, hdr.flags, out, n);
	gateann_record_unlock(&ed);
}

static int
relink_go_on(void *arg)
{
	Relink	   *rl = arg;

	gateann_vacuum_delay_point();
	/* our store was replaced: its rows no longer tell who is reached */
	if (gateann_store_reloaded_since(rl->c->index, rl->since, rl->c->store))
		rl->stopped = true;
	return !rl->stopped;
}

/*
 * The repair on the store's rows.  Inserts go on meanwhile and may take a
 * way in the repair's walk counted on: walk again after a repair that
 * linked anything, a few times at most.  True when a walk found every live
 * node reached.
 */
#define RELINK_PASSES 4

static bool
relink_unreachable(Consolidation *c, uint64 since)
{
	const GateannMetaPageData *meta = &c->meta;
	uint32		nnodes = Min(meta->nnodes, c->store->capacity);
	uint32		roots[GATEANN_MAX_ENTRIES + 1];
	GateannReachRepair rr;
	Relink		rl;
	int			pass;
	bool		all_reached = false;

	memset(&rl, 0, sizeof(rl));
	rl.c = c;
	rl.since = since;
	rl.L = Max(32, c->store->tunnel_neighbors);
	rl.table = palloc(sizeof(float) * gateann_pq_table_floats(meta->pq_subspaces));
	rl.row = palloc(sizeof(uint32) * (c->store->tunnel_neighbors + 1));
	memset(&rr, 0, sizeof(rr));
	rr.nnodes = nnodes;
	rr.nroots = gateann_meta_walk_roots(meta, roots);
	rr.roots = roots;
	rr.prefix_len = Max(c->store->tunnel_neighbors, 1);
	rr.prefix = relink_prefix;
	rr.near = near_reached;
	rr.can_link = relink_can_link;
	rr.link = relink_link;
	rr.go_on = relink_go_on;
	rr.arg = &rl;
	rr.reached = palloc(((Size) meta->nnodes + 7) / 8);
	rr.parent = MemoryContextAllocHuge(CurrentMemoryContext,
									   sizeof(uint32) * (Size) Max(nnodes, 1));
	rr.queue = MemoryContextAllocHuge(CurrentMemoryContext,
									  sizeof(uint32) * (Size) Max(nnodes, 1));
	rr.row = palloc(sizeof(uint32) * (rr.prefix_len + 1));
	rr.max_candidates = rl.L;
	rr.candidates = palloc(sizeof(uint32) * rr.max_candidates);

	for (pass = 0; pass < RELINK_PASSES; pass++)
	{
		if (!gateann_reach_repair(&rr))
			break;
		c->relinked += rr.linked;
		if (rr.linked == 0)
		{
			all_reached = (rr.left == 0);
			break;
		}
	}
	pfree(rl.table);
	pfree(rl.row);
	pfree(rr.reached);
	pfree(rr.parent);
	pfree(rr.queue);
	pfree(rr.row);
	pfree(rr.candidates);
	return all_reached;
}

/*
 * The stamps grow to cover meta.nnodes: inserts may have appended nodes
 * since the consolidation began, which the walk will meet.  (The maps keep
 * the node count they were made for: gone() takes every node past it for
 * live.)  Returns how many nodes they grew by.
 */
static uint32
cover_appended(Consolidation *c)
{
	uint32		grown = 0;

	if (c->meta.nnodes > c->stamp_nodes)
	{
		grown = c->meta.nnodes - c->stamp_nodes;
		c->stamp = repalloc_huge(c->stamp, sizeof(uint32) * (Size) c->meta.nnodes);
		memset(c->stamp + c->stamp_nodes, 0, sizeof(uint32) * (Size) grown);
		c->stamp_nodes = c->meta.nnodes;
	}
	return grown;
}

/*
 * Steps 3 and 4 repair the lists of the nodes there are when the metapage
 * says that slots are being freed (gateann.h, freeing_slots): an insert
 * that takes its id after that update sees it and drops its edges to
 * deleted nodes itself.  So the node count is read in that update.
 */
static void
set_freeing_slots(Consolidation *c, bool freeing)
{
	GateannMetaUpdate u;
	GateannMetaPageData *m = gateann_meta_update_begin(c->index, &u, false);

	gateann_meta_set_freeing_slots(m, freeing);
	if (freeing)
		memcpy(&c->meta, m, sizeof(GateannMetaPageData));
	gateann_meta_update_finish(&u);
	if (freeing)
	{
		(void) cover_appended(c);
		c->map_nodes = c->meta.nnodes;
	}
}

/*
 * Consolidate the deleted nodes of an index and free their slots.  Returns
 * the number of slots freed.
 */
static uint32
consolidate(IndexVacuumInfo *info, int64 *repaired, int64 *relinked)
{
	Consolidation c;
	GateannMetaPageData now;
	MemoryContext cxt;
	MemoryContext oldcxt;
	uint32		freed = 0;
	uint32		appended;
	uint64		since;
	bool		reloaded;

	memset(&c, 0, sizeof(c));
	c.index = info->index;
	c.strategy = info->strategy;
	gateann_read_meta(c.index, &c.meta);
	if (c.meta.nnodes == 0 || c.meta.dims == 0)
		return 0;
	/*
	 * Nothing deleted: only the reachability walk, over a loaded store, or
	 * over one loaded for it when a change since the last complete walk may
	 * have stranded a node (gateann.h, reach_changes: after a crash that
	 * kept a VACUUM's freed slots but lost the links it made next, no store
	 * is loaded and nothing is deleted any more).
	 */
	if (c.meta.ndeleted == 0 && !gateann_meta_reach_walk_due(&c.meta))
	{
		bool		shared;
		Size		bytes;

		if (!gateann_store_loaded(c.index, &c.meta, &shared, &bytes))
			return 0;
	}

	cxt = AllocSetContextCreate(CurrentMemoryContext, "gateann consolidation",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	c.node_cxt = AllocSetContextCreate(cxt, "gateann repaired list",
									   ALLOCSET_DEFAULT_SIZES);
	/*
	 * Before: a store loaded right after ours must count as "since"; ours,
	 * which we may have loaded ourselves, does not (were it dropped,
	 * relinking, which stops when its store was replaced, would never run
	 * after a restart).
	 */
	since = gateann_store_clock();
	c.store = gateann_store_get(c.index, &c.meta);
	c.rec = palloc(c.meta.record_size);
	c.cand_rec = palloc(c.meta.record_size);
	c.vecbuf = palloc(sizeof(float) * Max(c.meta.dims, 1));
	c.map_nodes = c.meta.nnodes;
	c.stamp_nodes = c.meta.nnodes;
	c.stamp = MemoryContextAllocHuge(cxt, sizeof(uint32) * (Size) c.stamp_nodes);
	memset(c.stamp, 0, sizeof(uint32) * (Size) c.stamp_nodes);
	c.stamp_now = 0;

	if (c.meta.ndeleted > 0 && replace_entry_point(&c))
	{
		replace_deleted_entries(&c);
		set_freeing_slots(&c, true);
		collect_deleted(&c);
		if (c.ndoomed > 0)
		{
			repair_lists(&c);
			free_slots(&c);
			freed = c.ndoomed;
		}
		set_freeing_slots(&c, false);
	}

	/*
	 * Inserts' reverse-edge prunes can take a node's last in-edge too (as
	 * in FreshDiskANN): the walk runs on every VACUUM, not only after
	 * consolidation.
	 */
	/*
	 * The walk decides on the store's neighbor rows: if another store of
	 * the index was loaded meanwhile, inserts went there, and ours misses
	 * their edges.  Drop the stores loaded since and walk on a fresh one.
	 */
	reloaded = gateann_store_reloaded_since(c.index, since, c.store);
	if (reloaded)
	{
		gateann_store_forget_reloaded_since(c.index, since, c.store);
		since = gateann_store_clock();
	}
	/* nodes appended meanwhile are walked too (their inserts repaired them) */
	gateann_read_meta(c.index, &c.meta);
	appended = cover_appended(&c);
	if (reloaded)
	{
		c.store = gateann_store_get(c.index, &c.meta);
		elog(DEBUG1, "gateann VACUUM of \"%s\": a store was loaded meanwhile, the walk covers %u nodes appended since it began",
			 RelationGetRelationName(c.index), appended);
	}
	/*
	 * The changes this walk covers: those counted before it begins, unless
	 * one of them appended a node beyond the ones it walks.
	 */
	gateann_read_meta(c.index, &now);
	if (relink_unreachable(&c, since) && now.nnodes <= c.meta.nnodes)
		gateann_meta_set_reach_checked(c.index, now.reach_changes);
	/* (as in gateann_bulkdelete) */
	gateann_store_forget_reloaded_since(c.index, since, c.store);
	*repaired = c.repaired;
	*relinked = c.relinked;

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return freed;
}

IndexBulkDeleteResult *
gateann_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	GateannMetaPageData meta;
	int64		repaired = 0;
	int64		relinked = 0;
	uint32		freed;

	if (info->analyze_only)
		return stats;
	freed = consolidate(info, &repaired, &relinked);
	if (freed > 0 || relinked > 0)
		ereport(info->message_level,
				(errmsg("gateann index \"%s\": %u slots freed, %lld neighbor lists repaired, %lld nodes relinked",
						RelationGetRelationName(info->index), freed,
						(long long) repaired, (long long) relinked)));

	/* an index that grew well past the rows its codebook saw: retrain.h */
	gateann_retrain_if_due(info->index, true);

	gateann_read_meta(info->index, &meta);
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	stats->num_index_tuples = GATEANN_LIVE_NODES(&meta);
	stats->estimated_count = false;
	stats->pages_free = 0;
	stats->num_pages = RelationGetNumberOfBlocks(info->index);
	return stats;
}
