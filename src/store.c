/*
 * store.c — loading the in-memory stores, shared or private.
 *
 * The loader reads the metapage's codebook pages, then every node page once
 * in order (a bulk-read strategy keeps it from flushing shared buffers),
 * copying each record's PQ code, first R_max neighbors and deleted flag.
 *
 * Shared stores are found through shmem.c.  Without the library preloaded,
 * or when no segment can be had, the backend keeps private copies (a NOTICE
 * once per backend says how to share them), cached by store key.
 */
#include "postgres.h"

#include "store.h"
#include "distance.h"
#include "reach.h"
#include "search.h"
#include "topk.h"
#include "filter.h"
#include "meta.h"
#include "page.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "storage/s_lock.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/inval.h"
#include "utils/syscache.h"
#include "utils/rel.h"

#define STORE_MAGIC				0x53544f52	/* "STOR" */
/* Keep at most this many private stores per backend. */
#define MAX_PRIVATE_STORES		8

static GateannStore *private_stores = NULL;
static bool warned_private = false;
static bool private_callback_registered = false;

/* Shared-store handles of this transaction (no need to look them up twice) */
static GateannStore *shared_handles = NULL;
static LocalTransactionId shared_handles_lxid = InvalidLocalTransactionId;

/* The segment of a shared store, 0 for a private one or none */
static inline uint32
store_segment(const GateannStore *s)
{
	return s != NULL && s->shared ? s->ref.handle : 0;
}

Size
gateann_store_pq_bytes(uint32 nnodes, int dims, int m)
{
	return nnodes > 0 ? gateann_pq_codebook_bytes(dims) + (Size) nnodes * gateann_pq_code_bytes(m) : 0;
}

Size
gateann_store_neighbor_bytes(uint32 nnodes, int r_max)
{
	return (Size) nnodes * (1 + r_max) * sizeof(uint32);
}

Size
gateann_store_filter_bytes(const GateannMetaPageData *meta)
{
	Size		bytes = ((Size) meta->nnodes + 7) / 8 + meta->dict_bytes;
	int			c;

	for (c = 0; c < meta->nfilter; c++)
		bytes += (Size) meta->nnodes * gateann_filter_store_width(&meta->filter[c]);
	return bytes;
}

/* Node blocks holding node ids 0 .. nnodes-1 */
static uint32
node_blocks_for(const GateannMetaPageData *meta, uint32 nnodes)
{
	if (meta->records_per_page > 0)
		return (nnodes + meta->records_per_page - 1) / meta->records_per_page;
	return nnodes * meta->pages_per_record;
}

/*
 * Room for the nodes an index has plus an eighth (and at least 1024) for
 * inserts, so that a growing index reloads its stores now and then, not at
 * every insert.
 */
static uint32
store_capacity(uint32 nnodes)
{
	uint64		cap = (uint64) nnodes + nnodes / 8 + 1024;

	return (uint32) Min(cap, (uint64) GATEANN_MAX_NODES);
}

static void
store_layout(GateannStoreHeader *h, const GateannMetaPageData *meta, int r_max,
			 uint32 capacity)
{
	Size		off = MAXALIGN(sizeof(GateannStoreHeader));
	Size		bitmap_bytes = sizeof(pg_atomic_uint32) * (((Size) capacity + 31) / 32);

	memset(h, 0, sizeof(*h));
	h->magic = STORE_MAGIC;
	h->nnodes = meta->nnodes;
	h->capacity = capacity;
	h->node_blocks = node_blocks_for(meta, capacity);
	h->dims = meta->dims;
	h->pq_subspaces = meta->pq_subspaces;
	h->tunnel_neighbors = r_max;
	h->codebook_off = off;
	off += MAXALIGN(meta->dims > 0 ? gateann_pq_codebook_bytes(meta->dims) : 0);
	h->codes_off = off;
	off += MAXALIGN((Size) capacity * gateann_pq_code_bytes(meta->pq_subspaces));
	h->neighbors_off = off;
	off += MAXALIGN(gateann_store_neighbor_bytes(capacity, r_max));
	h->present_off = off;
	off += MAXALIGN(bitmap_bytes);
	h->tail_off = off;
	off += MAXALIGN(bitmap_bytes);
	h->deleted_off = off;
	off += MAXALIGN(bitmap_bytes);
	h->marks_off = off;
	off += MAXALIGN(sizeof(pg_atomic_uint64) * (Size) h->node_blocks);
	h->hints_off = off;
	off += MAXALIGN(sizeof(pg_atomic_uint32) * (Size) h->node_blocks);
	h->rowlocks_off = off;
	off += MAXALIGN(sizeof(pg_atomic_uint32) * GATEANN_STORE_ROW_LOCKS);
	h->dict_off = off;
	off += MAXALIGN(meta->dict_bytes);
	{
		int			c;

		for (c = 0; c < meta->nfilter; c++)
		{
			h->filter_off[c] = off;
			off += MAXALIGN((Size) capacity * gateann_filter_store_width(&meta->filter[c]));
		}
	}
	h->total = off;
}

static void
store_key(GateannStoreKey *key, Relation index, const GateannMetaPageData *meta)
{
	memset(key, 0, sizeof(*key));
	key->dboid = GATEANN_REL_DATABASE(index);
	key->spcoid = GATEANN_REL_TABLESPACE(index);
	key->relfilenumber = GATEANN_REL_FILENUMBER(index);
	key->indexoid = RelationGetRelid(index);
	key->build_id = meta->build_id;
	key->tunnel_neighbors = gateann_tunnel_neighbors(gateann_get_options(index), meta);
	key->capacity = store_capacity(meta->nnodes);
	key->heapoid = index->rd_index->indrelid;

	/*
	 * Replay changes pages without raising the stores' block marks, which is
	 * harmless while scans read through shared buffers (they do during
	 * recovery) but not after promotion, when they read the files: a store
	 * loaded in recovery is not served afterwards, and the first scan loads
	 * one whose marks are the pages' as they are then.
	 */
	key->in_recovery = RecoveryInProgress();
}

static void
corrupted(Relation index, BlockNumber blkno, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("gateann index \"%s\": block %u is not a %s page",
					RelationGetRelationName(index), blkno, what),
			 errhint("REINDEX the index.")));
}

/* Copy the record bytes [from, from+len) of the record starting at blkno. */
static void
copy_from_record(Relation index, const GateannMetaPageData *meta, BlockNumber blkno,
				 Page first, uint32 from, uint32 len, char *dst,
				 BufferAccessStrategy bas)
{
	uint32		page_no = from / GATEANN_PAGE_CAPACITY;
	uint32		off = from % GATEANN_PAGE_CAPACITY;

	while (len > 0)
	{
		uint32		chunk = Min(len, (uint32) GATEANN_PAGE_CAPACITY - off);

		if (page_no == 0)
			memcpy(dst, PageGetContents(first) + off, chunk);
		else
		{
			Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno + page_no,
												 RBM_NORMAL, bas);

			LockBuffer(buf, BUFFER_LOCK_SHARE);
			if (!gateann_page_is_valid(BufferGetPage(buf), GATEANN_PAGE_NODES))
				corrupted(index, blkno + page_no, "node");
			memcpy(dst, PageGetContents(BufferGetPage(buf)) + off, chunk);
			UnlockReleaseBuffer(buf);
		}
		dst += chunk;
		len -= chunk;
		off = 0;
		page_no++;
	}
}

/*
 * Read `total` bytes written as consecutive pages of `kind` from block
 * start on (build.c's write_chunked) into dst.
 */
static void
read_chunked(Relation index, BlockNumber start, uint16 kind, const char *what,
			 char *dst, Size total)
{
	BlockNumber blkno;
	Size		done = 0;

	for (blkno = start; done < total; blkno++)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		Size		chunk = Min(total - done, (Size) GATEANN_PAGE_CAPACITY);

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		if (!gateann_page_is_valid(BufferGetPage(buf), kind))
			corrupted(index, blkno, what);
		memcpy(dst + done, PageGetContents(BufferGetPage(buf)), chunk);
		UnlockReleaseBuffer(buf);
		done += chunk;
	}
}

/* The dictionary pages' bytes (palloc'd), as the loader reads them */
char *
gateann_store_read_dictionaries(Relation index, const GateannMetaPageData *meta)
{
	char	   *dict = palloc(Max(meta->dict_bytes, 1));

	read_chunked(index, meta->dict_start, GATEANN_PAGE_DICT, "dictionary", dict,
				 meta->dict_bytes);
	return dict;
}

typedef struct LoadArgs
{
	Relation	index;
	const GateannMetaPageData *meta;
	GateannStoreHeader layout;
	/* filter store */
	GateannFilterCoder *coder;
	uint8	   *cols[GATEANN_MAX_FILTER_COLS];
	char	   *filter_area;	/* filter_size bytes, for records spanning pages */
} LoadArgs;

static inline void
bitmap_set(pg_atomic_uint32 *words, uint32 id)
{
	pg_atomic_fetch_or_u32(&words[id >> 5], 1U << (id & 31));
}

/* Raise a block's mark to lsn (marks only ever grow) */
static inline void
mark_raise(pg_atomic_uint64 *mark, XLogRecPtr lsn)
{
	uint64		old = pg_atomic_read_u64(mark);

	while (old < lsn && !pg_atomic_compare_exchange_u64(mark, &old, lsn))
		;
}

/* Extract one record's parts into the store. */
static void
load_record(LoadArgs *a, char *base, uint32 id, const char *rec_start,
			BlockNumber blkno, Page page, BufferAccessStrategy bas)
{
	const GateannMetaPageData *meta = a->meta;
	const GateannStoreHeader *h = &a->layout;
	uint32	   *row = (uint32 *) (base + h->neighbors_off) + (Size) id * (1 + h->tunnel_neighbors);
	Size		cb = gateann_pq_code_bytes(meta->pq_subspaces);
	uint8	   *code = (uint8 *) base + h->codes_off + (Size) id * cb;
	GateannNodeHeader hdr;
	int			n;

	if (rec_start != NULL)
	{
		/* record within one page */
		memcpy(&hdr, rec_start, sizeof(hdr));
		n = Min((int) hdr.nneighbors, h->tunnel_neighbors);
		memcpy(code, rec_start + meta->pqcode_offset, cb);
		memcpy(row + 1, rec_start + meta->neighbors_offset, sizeof(uint32) * n);
		if (meta->nfilter > 0)
			gateann_filter_coder_code(a->coder, (const uint8 *) rec_start + meta->filter_offset,
									  id, a->cols);
	}
	else
	{
		copy_from_record(a->index, meta, blkno, page, 0, sizeof(hdr), (char *) &hdr, bas);
		n = Min((int) hdr.nneighbors, h->tunnel_neighbors);
		copy_from_record(a->index, meta, blkno, page, meta->pqcode_offset,
						 cb, (char *) code, bas);
		copy_from_record(a->index, meta, blkno, page, meta->neighbors_offset,
						 sizeof(uint32) * n, (char *) (row + 1), bas);
		if (meta->nfilter > 0)
		{
			copy_from_record(a->index, meta, blkno, page, meta->filter_offset,
							 meta->filter_size, a->filter_area, bas);
			gateann_filter_coder_code(a->coder, (const uint8 *) a->filter_area, id, a->cols);
		}
	}
	gateann_record_check_node(a->index, &hdr, id);
	if (hdr.flags & GATEANN_NODE_FREE)
	{
		/* a free slot is not a node: never present until an insert takes it */
		row[0] = 0;
		return;
	}
	if (hdr.flags & GATEANN_NODE_DELETED)
		bitmap_set((pg_atomic_uint32 *) (base + h->deleted_off), id);
	if (hdr.flags & GATEANN_NODE_TAIL)
	{
		/* outside the graph: its filter codes only */
		row[0] = 0;
		bitmap_set((pg_atomic_uint32 *) (base + h->tail_off), id);
		return;
	}
	row[0] = (uint32) n;
	bitmap_set((pg_atomic_uint32 *) (base + h->present_off), id);
}

/*
 * Load nodes [from, to) of the index into the store at base: one pass over
 * their pages in order.  Each node block's mark becomes its LSN in shared
 * buffers: a direct read of the block is current only if the file has
 * caught up with that.
 */
static void
load_nodes(LoadArgs *a, char *base, uint32 from, uint32 to)
{
	const GateannMetaPageData *meta = a->meta;
	pg_atomic_uint64 *marks = (pg_atomic_uint64 *) (base + a->layout.marks_off);
	BufferAccessStrategy bas = GetAccessStrategy(BAS_BULKREAD);
	uint32		id = from;

	while (id < to)
	{
		GateannRecordLoc loc = gateann_record_location(meta, id);
		Buffer		buf;
		Page		page;
		uint32		b;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBufferExtended(a->index, MAIN_FORKNUM, loc.block, RBM_NORMAL, bas);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!gateann_page_is_valid(page, GATEANN_PAGE_NODES))
			corrupted(a->index, loc.block, "node");
		if (meta->records_per_page > 0)
		{
			uint32		slot = loc.offset / meta->record_size;

			for (; slot < meta->records_per_page && id < to; slot++, id++)
				load_record(a, base, id, PageGetContents(page) + slot * meta->record_size,
							loc.block, page, bas);
			mark_raise(&marks[loc.block - meta->node_start], BufferGetLSNAtomic(buf));
		}
		else
		{
			load_record(a, base, id++, NULL, loc.block, page, bas);
			/* the record's other pages were read by copy_from_record */
			for (b = 0; b < meta->pages_per_record; b++)
			{
				Buffer		other = b == 0 ? buf :
					ReadBufferExtended(a->index, MAIN_FORKNUM, loc.block + b, RBM_NORMAL, bas);

				if (b > 0)
					LockBuffer(other, BUFFER_LOCK_SHARE);
				mark_raise(&marks[loc.block + b - meta->node_start],
						   BufferGetLSNAtomic(other));
				if (b > 0)
					UnlockReleaseBuffer(other);
			}
		}
		UnlockReleaseBuffer(buf);
	}
	FreeAccessStrategy(bas);
}

/* The filter coder of a load, over the store's dictionaries */
static void
load_filter_setup(LoadArgs *a, char *base)
{
	const GateannMetaPageData *meta = a->meta;
	int			c;

	if (meta->nfilter == 0)
		return;
	a->coder = gateann_filter_coder_create(a->index, meta, base + a->layout.dict_off);
	for (c = 0; c < meta->nfilter; c++)
		a->cols[c] = (uint8 *) base + a->layout.filter_off[c];
	a->filter_area = palloc(Max(meta->filter_size, 1));
}

/* GateannStoreLoader: fill `dest` (layout->total bytes) from the index. */
static void
load_store(void *dest, Size bytes, void *arg)
{
	LoadArgs   *a = (LoadArgs *) arg;
	const GateannMetaPageData *meta = a->meta;
	char	   *base = (char *) dest;
	GateannStoreHeader *h = &a->layout;
	Size		i;

	Assert(bytes == a->layout.total);
	memset(base, 0, bytes);
	memcpy(base, &a->layout, sizeof(GateannStoreHeader));
	for (i = 0; i < ((Size) h->capacity + 31) / 32; i++)
	{
		pg_atomic_init_u32((pg_atomic_uint32 *) (base + h->present_off) + i, 0);
		pg_atomic_init_u32((pg_atomic_uint32 *) (base + h->tail_off) + i, 0);
		pg_atomic_init_u32((pg_atomic_uint32 *) (base + h->deleted_off) + i, 0);
	}
	for (i = 0; i < h->node_blocks; i++)
	{
		pg_atomic_init_u64((pg_atomic_uint64 *) (base + h->marks_off) + i, 0);
		pg_atomic_init_u32((pg_atomic_uint32 *) (base + h->hints_off) + i, 0);
	}
	for (i = 0; i < GATEANN_STORE_ROW_LOCKS; i++)
		pg_atomic_init_u32((pg_atomic_uint32 *) (base + h->rowlocks_off) + i, 0);
	pg_atomic_init_u32(&((GateannStoreHeader *) base)->caught_up, meta->nnodes);
	pg_atomic_init_u64(&((GateannStoreHeader *) base)->reuse_seen, meta->reuse_count);
	pg_atomic_init_u32(&((GateannStoreHeader *) base)->refreshing, 0);
	/*
	 * (an index set up by its first insert has a codebook before any node;
	 * one that has seen no vector yet holds tail records only)
	 */
	if (meta->nnodes == 0 && meta->codebook_pages == 0)
		return;
	if (meta->dims > 0)
		read_chunked(a->index, meta->codebook_start, GATEANN_PAGE_CODEBOOK, "codebook",
					 base + a->layout.codebook_off, gateann_pq_codebook_bytes(meta->dims));
	if (meta->nfilter > 0)
	{
		int			c;

		read_chunked(a->index, meta->dict_start, GATEANN_PAGE_DICT, "dictionary",
					 base + a->layout.dict_off, meta->dict_bytes);
		for (c = 0; c < meta->nfilter; c++)
		{
			char	   *problem = gateann_filter_dictionary_problem(a->index, meta, c,
																	base + a->layout.dict_off);

			if (problem != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INDEX_CORRUPTED),
						 errmsg("gateann index \"%s\" is damaged: %s",
								RelationGetRelationName(a->index), problem),
						 errhint("REINDEX the index.")));
		}
	}
	if (meta->dict_area_pages > 0)
	{
		GateannMetaPageData now;

		/*
		 * A retrain writes new dictionaries to the area we did not read, but
		 * the one after it writes to ours: if one published its
		 * dictionaries since our metapage was read, the next may have been
		 * writing over what we read.
		 */
		gateann_read_meta(a->index, &now);
		if (now.dict_generation != meta->dict_generation)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("gateann index \"%s\" was retrained while its in-memory stores were being loaded",
							RelationGetRelationName(a->index)),
					 errhint("Run the statement again.")));
	}
	load_filter_setup(a, base);
	load_nodes(a, base, 0, meta->nnodes);
}

/* Point a handle's fields into a loaded block */
static void
store_attach(GateannStore *s, void *base)
{
	GateannStoreHeader *h = (GateannStoreHeader *) base;
	char	   *b = (char *) base;

	s->hdr = h;
	s->capacity = h->capacity;
	s->pq_subspaces = h->pq_subspaces;
	s->code_bytes = gateann_pq_code_bytes(h->pq_subspaces);
	s->tunnel_neighbors = h->tunnel_neighbors;
	gateann_pq_attach(&s->pq, h->dims, h->pq_subspaces, (float *) (b + h->codebook_off));
	s->codes = (uint8 *) b + h->codes_off;
	s->neighbors = (uint32 *) (b + h->neighbors_off);
	s->present = (pg_atomic_uint32 *) (b + h->present_off);
	s->tail = (pg_atomic_uint32 *) (b + h->tail_off);
	s->deleted = (pg_atomic_uint32 *) (b + h->deleted_off);
	s->marks = (pg_atomic_uint64 *) (b + h->marks_off);
	s->hints = (pg_atomic_uint32 *) (b + h->hints_off);
	s->rowlocks = (pg_atomic_uint32 *) (b + h->rowlocks_off);
	s->dict = (const char *) b + h->dict_off;
	{
		int			c;

		for (c = 0; c < GATEANN_MAX_FILTER_COLS; c++)
			s->filter_cols[c] = h->filter_off[c] ? (uint8 *) b + h->filter_off[c] : NULL;
	}
	s->bytes = h->total;
}

/* A handle, allocated in cxt, on the store loaded at base */
static GateannStore *
store_handle(MemoryContext cxt, const GateannStoreKey *key, bool shared, void *base)
{
	GateannStore *s = MemoryContextAllocZero(cxt, sizeof(GateannStore));

	s->key = *key;
	s->shared = shared;
	store_attach(s, base);
	s->key.capacity = s->capacity;
	return s;
}

/*
 * Private copies (no registry, or a store that did not fit it) are bounded
 * like shared ones: together at most gateann.max_shared_memory per
 * backend, least recently used ones freed first, and a copy of an index
 * that was dropped is freed too.  A copy is never freed in the transaction
 * that got it (a scan of that transaction may still read it); a copy larger
 * than the whole budget is freed when that transaction ends, so that it is
 * read again by the next one rather than held by an idle session.
 */
static Size
private_budget(void)
{
	return (Size) gateann_max_shared_memory_mb * 1024 * 1024;
}

/* A relcache invalidation of the index (or of everything): is it still there? */
static void
private_relcache_callback(Datum arg, Oid relid)
{
	GateannStore *s;

	for (s = private_stores; s != NULL; s = s->next)
		if (!OidIsValid(relid) || s->key.indexoid == relid)
			s->check_exists = true;
}

/* End of a transaction: its scans are over; free copies larger than the budget */
static void
private_xact_callback(XactEvent event, void *arg)
{
	GateannStore **prev = &private_stores;
	GateannStore *s;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	while ((s = *prev) != NULL)
	{
		if (s->bytes > private_budget())
		{
			*prev = s->next;
			MemoryContextDelete(s->cxt);
			continue;
		}
		prev = &s->next;
	}
}

static bool
private_in_use(const GateannStore *s)
{
	return s->used_lxid == GATEANN_MY_LXID();
}

/* Free private copies of indexes that are gone, and of others past the budget or count */
static void
private_evict(const GateannStoreKey *key, Size incoming)
{
	GateannStore **prev = &private_stores;
	GateannStore *s;
	Size		kept = 0;
	int			count = 0;

	while ((s = *prev) != NULL)
	{
		bool		drop = false;

		if (s->check_exists && !private_in_use(s))
		{
			s->check_exists = false;
			drop = !SearchSysCacheExists1(RELOID, ObjectIdGetDatum(s->key.indexoid));
		}
		if (s->bytes > private_budget() && !private_in_use(s))
			drop = true;		/* over the budget alone: kept for one transaction */
		if (key != NULL && !private_in_use(s) &&
			((s->key.indexoid == key->indexoid && s->key.dboid == key->dboid) ||
			 count + 1 >= MAX_PRIVATE_STORES || kept + s->bytes + incoming > private_budget()))
			drop = true;		/* (the list is most recently used first) */
		if (drop)
		{
			*prev = s->next;
			MemoryContextDelete(s->cxt);
			continue;
		}
		kept += s->bytes;
		count++;
		prev = &s->next;
	}
}

uint64
gateann_store_clock(void)
{
	return gateann_shmem_clock();
}

bool
gateann_store_reloaded_since(Relation index, uint64 since, const GateannStore *own)
{
	return gateann_shmem_loaded_since(MyDatabaseId, RelationGetRelid(index), since,
									  store_segment(own));
}

void
gateann_store_forget_reloaded_since(Relation index, uint64 since, const GateannStore *own)
{
	gateann_shmem_forget_loaded_since(MyDatabaseId, RelationGetRelid(index), since,
									  store_segment(own));
}

/*
 * REINDEX, TRUNCATE and VACUUM FULL give the index a new build: its stores
 * are keyed by the old one and would only be found stale and replaced on
 * the index's next use.  Give their memory back now (a rebuild that rolls
 * back costs one reload).
 */
void
gateann_store_forget_index(Relation index)
{
	GateannStore **prev = &private_stores;
	GateannStore *s;

	gateann_shmem_forget(MyDatabaseId, RelationGetRelid(index));
	while ((s = *prev) != NULL)
	{
		if (s->key.indexoid == RelationGetRelid(index) && s->key.dboid == MyDatabaseId &&
			!private_in_use(s))
		{
			*prev = s->next;
			MemoryContextDelete(s->cxt);
			continue;
		}
		prev = &s->next;
	}
}

static GateannStore *
private_lookup(const GateannStoreKey *key)
{
	GateannStore **prev = &private_stores;
	GateannStore *s;

	private_evict(NULL, 0);		/* dropped indexes' copies */
	for (s = private_stores; s != NULL; prev = &s->next, s = s->next)
	{
		if (gateann_store_key_equal(&s->key, key))
		{
			*prev = s->next;	/* move to front: most recently used */
			s->next = private_stores;
			private_stores = s;
			s->used_lxid = GATEANN_MY_LXID();
			return s;
		}
	}
	return NULL;
}

/*
 * Make every node of meta present in the store.  Writers publish the nodes
 * they add themselves, but not everyone can: a private copy misses other
 * backends' inserts, a hot standby's stores miss every replayed insert, and
 * an insert that failed half-way may leave its node out.  Missing nodes are
 * loaded from their pages.  (Changes to older nodes' rows by other
 * backends, on a private copy or a standby, are missed until the store is
 * reloaded: those rows only steer tunneling, and every record read brings
 * its full, current list.)
 */
static void
store_catch_up(GateannStore *s, Relation index, const GateannMetaPageData *meta)
{
	GateannStoreHeader *h = s->hdr;
	uint32		from = pg_atomic_read_u32(&h->caught_up);
	uint32		to = Min(meta->nnodes, s->capacity);
	LoadArgs	args;
	bool		setup = false;
	uint32		id;

	if (to <= from)
		return;
	memset(&args, 0, sizeof(args));
	args.index = index;
	args.meta = meta;
	args.layout = *h;
	for (id = from; id < to; id++)
	{
		uint32		end;

		if (gateann_store_has(s, id) || gateann_store_is_tail(s, id))
			continue;
		for (end = id + 1;
			 end < to && !gateann_store_has(s, end) && !gateann_store_is_tail(s, end); end++)
			;
		if (!setup)
		{
			load_filter_setup(&args, (char *) h);
			setup = true;
		}
		load_nodes(&args, (char *) h, id, end);
		id = end;
	}
	while (from < to && !pg_atomic_compare_exchange_u32(&h->caught_up, &from, to))
		;
}

int
gateann_store_row_neighbors(void *arg, uint32 id, uint32 *out, int max)
{
	const GateannStore *s = (const GateannStore *) arg;
	uint32		row[GATEANN_MAX_NEIGHBORS_LIMIT];
	int			n;

	if (!gateann_store_has(s, id))
		return -1;
	n = Min(gateann_store_copy_neighbors(s, id, row), max);
	memcpy(out, row, sizeof(uint32) * n);
	return n;
}

uint32
gateann_store_unreachable(const GateannStore *s, const GateannMetaPageData *meta,
						  uint8 *reached)
{
	uint32		nnodes = Min(meta->nnodes, s->capacity);
	uint32	   *queue = palloc_extended(sizeof(uint32) * (Size) Max(meta->nnodes, 1),
										MCXT_ALLOC_HUGE);
	uint32	   *row = palloc(sizeof(uint32) * (s->tunnel_neighbors + 1));
	uint32		roots[GATEANN_MAX_ENTRIES + 1];
	uint32		unreached = 0;
	uint32		id;

	(void) gateann_reach_roots(nnodes, roots, gateann_meta_walk_roots(meta, roots),
							   gateann_store_row_neighbors, (void *) s, s->tunnel_neighbors,
							   reached, NULL, queue, row);
	for (id = 0; id < nnodes; id++)
		if (!gateann_reached(reached, id) && gateann_store_has(s, id) &&
			!gateann_store_is_deleted(s, id))
			unreached++;
	pfree(queue);
	pfree(row);
	return unreached;
}

int
gateann_store_entries_by_distance(const GateannStore *s, const GateannMetaPageData *meta,
								  const float *table, uint32 *out, int sorted)
{
	GateannScored e[GATEANN_MAX_ENTRIES];
	int			n = 0;
	uint32		i;

	for (i = 0; i < meta->nentries && i < GATEANN_MAX_ENTRIES; i++)
	{
		uint32		id = meta->entries[i];

		if (!gateann_store_has(s, id))
			continue;
		e[n].id = id;
		e[n].dist = gateann_pq_code_distance(table, gateann_store_code(s, id), s->pq_subspaces);
		n++;
	}
	/* (a search starts from a few: sorting all 257 was 5 % of a query's time) */
	(void) gateann_topk_sorted(e, n, Min(sorted, n));
	for (i = 0; i < (uint32) n; i++)
		out[i] = e[i].id;
	return n;
}

/*
 * Re-read node id from its pages into the store: code, filter codes, row,
 * deleted and present bits as the record says.
 */
static void
refresh_from_page(GateannStore *s, Relation index, const GateannMetaPageData *meta,
				  uint32 id, char *rec)
{
	GateannNodeHeader *hdr = GateannRecordHeader(rec);

	if (id >= s->capacity || id >= meta->nnodes)
		return;
	gateann_read_record(index, meta, id, rec, NULL);
	if (hdr->node_id != id)
		return;					/* gateann_verify reports it */
	if (hdr->flags & GATEANN_NODE_FREE)
	{
		gateann_store_set_free(s, id);
		return;
	}
	gateann_store_set_node(s, index, meta, id, rec);
	if (hdr->flags & GATEANN_NODE_DELETED)
		gateann_store_set_deleted(s, id);
	else
		gateann_store_clear_deleted(s, id);
	if (hdr->flags & GATEANN_NODE_TAIL)
	{
		gateann_store_set_free(s, id);	/* not in the graph ... */
		gateann_store_set_tail(s, id);	/* ... a tail record */
		return;
	}
	gateann_store_set_neighbors(s, id, GateannRecordNeighbors(meta, rec), hdr->nneighbors);
	pg_atomic_fetch_and_u32(&s->tail[id >> 5], ~(1U << (id & 31)));
	gateann_store_set_present(s, id);
}

/*
 * Slots reused since the store last looked (the metapage's reuse ring).  A
 * shared store on a primary needs nothing: the inserts that reuse slots
 * write it in place.  A private copy or a standby's store would otherwise
 * keep the old node's PQ code and filter codes for the new node, which
 * could hide it from filtered searches.  One backend at a time refreshes;
 * others go on with the store as it is.  More reuses than the ring holds:
 * every node is re-read.
 */
static void
store_refresh_reused(GateannStore *s, Relation index, const GateannMetaPageData *meta)
{
	GateannStoreHeader *h = s->hdr;
	uint64		seen = pg_atomic_read_u64(&h->reuse_seen);
	uint32		expected = 0;
	char	   *rec;

	if (meta->reuse_count <= seen)
		return;
	if (s->shared && !RecoveryInProgress())
	{
		pg_atomic_compare_exchange_u64(&h->reuse_seen, &seen, meta->reuse_count);
		return;
	}
	if (!pg_atomic_compare_exchange_u32(&h->refreshing, &expected, 1))
		return;
	PG_TRY();
	{
		rec = palloc(meta->record_size);
		if (meta->reuse_count - seen > GATEANN_REUSE_LOG)
		{
			uint32		id;

			for (id = 0; id < meta->nnodes; id++)
			{
				if ((id & 1023) == 0)
					CHECK_FOR_INTERRUPTS();
				refresh_from_page(s, index, meta, id, rec);
			}
		}
		else
		{
			uint64		k;

			for (k = seen; k < meta->reuse_count; k++)
				refresh_from_page(s, index, meta,
								  meta->reuse_log[k % GATEANN_REUSE_LOG], rec);
		}
		pfree(rec);
		pg_atomic_write_u64(&h->reuse_seen, meta->reuse_count);
	}
	PG_FINALLY();
	{
		pg_atomic_write_u32(&h->refreshing, 0);
	}
	PG_END_TRY();
}

/* Handles of an earlier transaction are forgotten: their memory is gone */
static void
shared_handles_start_xact(void)
{
	if (shared_handles_lxid != GATEANN_MY_LXID())
	{
		shared_handles = NULL;
		shared_handles_lxid = GATEANN_MY_LXID();
	}
}

/*
 * A handle of this transaction on the shared store for key.  A handle found
 * before the registry's generation moved is not trusted: its store may have
 * been removed and a new one loaded that writers now update instead, so it
 * is looked up again.  (Scans that hold it keep reading it: its mapping
 * lasts until the transaction ends.)
 */
static GateannStore *
shared_handle_lookup(const GateannStoreKey *key, uint32 needed)
{
	GateannStore **prev;
	GateannStore *s;
	uint32		generation = gateann_shmem_generation();

	shared_handles_start_xact();
	prev = &shared_handles;
	while ((s = *prev) != NULL)
	{
		if (s->ref.generation != generation)
		{
			*prev = s->next;
			continue;
		}
		if (gateann_store_key_equal(&s->key, key) && s->capacity >= needed)
			return s;
		prev = &s->next;
	}
	return NULL;
}

/* A handle for this transaction on the shared store mapped at base */
static GateannStore *
shared_handle_new(const GateannStoreKey *key, void *base, const GateannShmemRef *ref)
{
	GateannStore *s;

	shared_handles_start_xact();
	/* it lives for the transaction, like the mapping's use count */
	s = store_handle(TopTransactionContext, key, true, base);
	s->ref = *ref;
	s->next = shared_handles;
	shared_handles = s;
	return s;
}

GateannStore *
gateann_store_next_reloaded(Relation index, const GateannMetaPageData *meta,
							const GateannStore *written, uint64 *since)
{
	GateannStoreKey key;

	store_key(&key, index, meta);
	for (;;)
	{
		uint64		now = gateann_shmem_clock();
		GateannShmemRef ref;
		void	   *base;

		if (!gateann_shmem_loaded_since(key.dboid, key.indexoid, *since, store_segment(written)))
			return NULL;
		*since = now;
		/* (one that began loading after `now` is found by the next call) */
		base = gateann_shmem_get(&key, meta->nnodes + 1, 0, NULL, NULL, &ref);
		if (base == NULL || ref.handle == store_segment(written))
			continue;			/* gone again, or the one written */
		return shared_handle_new(&key, base, &ref);
	}
}

GateannStore *
gateann_store_get(Relation index, const GateannMetaPageData *meta)
{
	GateannStoreKey key;
	LoadArgs	args;
	GateannStore *s;
	void	   *base;
	GateannShmemRef ref;
	MemoryContext cxt;

	store_key(&key, index, meta);
	/* room for one more node than the index has: the next insert's */
	if ((s = shared_handle_lookup(&key, meta->nnodes + 1)) != NULL)
	{
		store_catch_up(s, index, meta);
		store_refresh_reused(s, index, meta);
		return s;
	}
	if ((s = private_lookup(&key)) != NULL && meta->nnodes < s->capacity)
	{
		/*
		 * A copy kept from a time when the store did not fit the shared
		 * budget serves only while no shared store exists: writers update a
		 * shared store in place, and this backend's own changes must reach
		 * it too (the copy ages out of the private list).
		 */
		base = gateann_shmem_get(&key, meta->nnodes + 1, 0, NULL, NULL, &ref);
		if (base != NULL)
			s = shared_handle_new(&key, base, &ref);
		store_catch_up(s, index, meta);
		store_refresh_reused(s, index, meta);
		return s;
	}
	/* (an outgrown private copy is replaced below) */

	memset(&args, 0, sizeof(args));
	args.index = index;
	args.meta = meta;
	store_layout(&args.layout, meta, key.tunnel_neighbors, key.capacity);

	base = gateann_shmem_get(&key, meta->nnodes + 1, args.layout.total, load_store, &args,
							 &ref);
	if (base != NULL)
	{
		s = shared_handle_new(&key, base, &ref);
		store_catch_up(s, index, meta);
		store_refresh_reused(s, index, meta);
		return s;
	}

	if (!gateann_shmem_available() && !warned_private)
	{
		ereport(NOTICE,
				(errmsg("gateann keeps a private copy of index stores in each backend"),
				 errhint("Add gateann to shared_preload_libraries to share one copy between all backends.")));
		warned_private = true;
	}

	private_evict(&key, args.layout.total);
	if (!private_callback_registered)
	{
		CacheRegisterRelcacheCallback(private_relcache_callback, (Datum) 0);
		RegisterXactCallback(private_xact_callback, NULL);
		private_callback_registered = true;
	}
	cxt = AllocSetContextCreate(TopMemoryContext, "gateann private store",
								ALLOCSET_DEFAULT_SIZES);
	PG_TRY();
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

		base = MemoryContextAllocHuge(cxt, args.layout.total);
		load_store(base, args.layout.total, &args);
		MemoryContextSwitchTo(oldcxt);
	}
	PG_CATCH();
	{
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	s = store_handle(cxt, &key, false, base);
	s->cxt = cxt;
	s->used_lxid = GATEANN_MY_LXID();
	s->next = private_stores;
	private_stores = s;
	return s;
}

bool
gateann_store_loaded(Relation index, const GateannMetaPageData *meta,
					 bool *shared, Size *bytes)
{
	GateannStoreKey key;
	GateannStore *s;

	store_key(&key, index, meta);
	if (gateann_shmem_lookup(&key, bytes))
	{
		*shared = true;
		return true;
	}
	for (s = private_stores; s != NULL; s = s->next)
	{
		if (gateann_store_key_equal(&s->key, &key))
		{
			*shared = false;
			*bytes = s->bytes;
			return true;
		}
	}
	return false;
}

/* ---- rows under sequence locks ------------------------------------------ */

int
gateann_store_copy_neighbors(const GateannStore *s, uint32 id, uint32 *buf)
{
	pg_atomic_uint32 *lock = &s->rowlocks[id % GATEANN_STORE_ROW_LOCKS];
	const uint32 *row = gateann_store_row(s, id);
	SpinDelayStatus delay;

	/*
	 * A writer holds a row for one short copy; if it is descheduled there,
	 * back off and sleep as a spinlock waiter does (and report a stuck one).
	 * (No finish_spin_delay: that tunes the backend's spinlock spinning for
	 * the locks it was made for.)
	 */
	init_local_spin_delay(&delay);
	for (;;)
	{
		uint32		before = pg_atomic_read_u32(lock);
		int			n;

		if (before & 1)
		{
			perform_spin_delay(&delay); /* a writer is in the middle of it */
			continue;
		}
		pg_read_barrier();
		n = Min((int) row[0], s->tunnel_neighbors);
		memcpy(buf, row + 1, sizeof(uint32) * n);
		pg_read_barrier();
		if (pg_atomic_read_u32(lock) == before)
			return n;
	}
}

void
gateann_store_set_neighbors(GateannStore *s, uint32 id, const uint32 *nbrs, int n)
{
	pg_atomic_uint32 *lock = &s->rowlocks[id % GATEANN_STORE_ROW_LOCKS];
	uint32	   *row = gateann_store_row(s, id);

	SpinDelayStatus delay;

	Assert(id < s->capacity);
	n = Min(n, s->tunnel_neighbors);
	init_local_spin_delay(&delay);
	for (;;)
	{
		uint32		v = pg_atomic_read_u32(lock);

		if ((v & 1) == 0 && pg_atomic_compare_exchange_u32(lock, &v, v + 1))
			break;
		perform_spin_delay(&delay);
	}
	/* (the exchange is a full barrier) */
	row[0] = (uint32) n;
	memcpy(row + 1, nbrs, sizeof(uint32) * n);
	pg_write_barrier();
	pg_atomic_fetch_add_u32(lock, 1);
}

void
gateann_store_code_filters(GateannStore *s, Relation index, const GateannMetaPageData *meta,
						   const char *record, GateannStoreFilterCodes *codes)
{
	uint8	   *cols[GATEANN_MAX_FILTER_COLS];
	GateannFilterCoder *coder;
	int			c;

	if (meta->nfilter == 0)
		return;
	/* one row of each column, at position 0 */
	for (c = 0; c < meta->nfilter; c++)
		cols[c] = codes->col[c];
	coder = gateann_filter_coder_create(index, meta, s->dict);
	gateann_filter_coder_code(coder, (const uint8 *) record + meta->filter_offset, 0, cols);
	pfree(coder);
}

void
gateann_store_put_node(GateannStore *s, const GateannMetaPageData *meta, uint32 id,
					   const char *record, const GateannStoreFilterCodes *codes)
{
	int			c;

	Assert(id < s->capacity);
	memcpy(s->codes + (Size) id * s->code_bytes,
		   record + meta->pqcode_offset, s->code_bytes);
	for (c = 0; c < meta->nfilter; c++)
	{
		int			width = gateann_filter_store_width(&meta->filter[c]);

		memcpy(s->filter_cols[c] + (Size) id * width, codes->col[c], width);
	}
}

void
gateann_store_set_node(GateannStore *s, Relation index, const GateannMetaPageData *meta,
					   uint32 id, const char *record)
{
	GateannStoreFilterCodes codes;

	gateann_store_code_filters(s, index, meta, record, &codes);
	gateann_store_put_node(s, meta, id, record, &codes);
}

void
gateann_store_set_present(GateannStore *s, uint32 id)
{
	pg_write_barrier();			/* entries before the bit */
	bitmap_set(s->present, id);
}

void
gateann_store_set_tail(GateannStore *s, uint32 id)
{
	pg_write_barrier();			/* filter codes before the bit */
	bitmap_set(s->tail, id);
}

void
gateann_store_set_deleted(GateannStore *s, uint32 id)
{
	if (id < s->capacity)
		bitmap_set(s->deleted, id);
}

void
gateann_store_clear_deleted(GateannStore *s, uint32 id)
{
	if (id < s->capacity)
		pg_atomic_fetch_and_u32(&s->deleted[id >> 5], ~(1U << (id & 31)));
}

void
gateann_store_set_free(GateannStore *s, uint32 id)
{
	uint32		none[1];

	if (id >= s->capacity)
		return;
	pg_atomic_fetch_and_u32(&s->present[id >> 5], ~(1U << (id & 31)));
	pg_atomic_fetch_and_u32(&s->tail[id >> 5], ~(1U << (id & 31)));
	gateann_store_set_neighbors(s, id, none, 0);
}

void
gateann_store_page_changed(GateannStore *s, const GateannMetaPageData *meta, Buffer buf)
{
	gateann_store_mark_block(s, BufferGetBlockNumber(buf) - meta->node_start,
							 PageGetLSN(BufferGetPage(buf)));
}

void
gateann_store_edit_finish(GateannStore *s, const GateannMetaPageData *meta,
						  GateannRecordEdit *ed)
{
	int			i;

	gateann_record_finish_change(ed);
	for (i = 0; i < ed->npages; i++)
		gateann_store_page_changed(s, meta, ed->bufs[i]);
}

void
gateann_store_write_list(GateannStore *s, const GateannMetaPageData *meta, Relation index,
						 GateannRecordEdit *ed, uint32 id, uint16 flags, const uint32 *list,
						 int n)
{
	gateann_record_begin_change(index, ed, InvalidBuffer);
	gateann_record_put_list(meta, ed, flags, list, n);
	gateann_store_edit_finish(s, meta, ed);
	gateann_store_set_neighbors(s, id, list, n);
}

void
gateann_store_mark_block(GateannStore *s, uint32 blkno_in_nodes, XLogRecPtr lsn)
{
	if (blkno_in_nodes >= s->hdr->node_blocks)
		return;					/* beyond the store: read through the buffer */
	mark_raise(&s->marks[blkno_in_nodes], lsn);
}
