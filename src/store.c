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
#include "filter.h"
#include "page.h"

#include "miscadmin.h"
#include "storage/proc.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#define STORE_MAGIC				0x53544f52	/* "STOR" */
/* Keep at most this many private stores per backend. */
#define MAX_PRIVATE_STORES		8

static GateannStore *private_stores = NULL;
static bool warned_private = false;

/* Shared-store handles of this transaction (no need to look them up twice) */
static GateannStore *shared_handles = NULL;
static LocalTransactionId shared_handles_lxid = InvalidLocalTransactionId;

Size
gateann_store_pq_bytes(uint32 nnodes, int dims, int m)
{
	return nnodes > 0 ? gateann_pq_codebook_bytes(dims) + (Size) nnodes * m : 0;
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

static void
store_layout(GateannStoreHeader *h, const GateannMetaPageData *meta, int r_max)
{
	Size		off = MAXALIGN(sizeof(GateannStoreHeader));

	memset(h, 0, sizeof(*h));
	h->magic = STORE_MAGIC;
	h->nnodes = meta->nnodes;
	h->dims = meta->dims;
	h->pq_subspaces = meta->pq_subspaces;
	h->tunnel_neighbors = r_max;
	h->codebook_off = off;
	off += MAXALIGN(meta->nnodes > 0 ? gateann_pq_codebook_bytes(meta->dims) : 0);
	h->codes_off = off;
	off += MAXALIGN((Size) meta->nnodes * meta->pq_subspaces);
	h->neighbors_off = off;
	off += MAXALIGN(gateann_store_neighbor_bytes(meta->nnodes, r_max));
	h->deleted_off = off;
	off += MAXALIGN(((Size) meta->nnodes + 7) / 8);
	h->dict_off = off;
	off += MAXALIGN(meta->dict_bytes);
	{
		int			c;

		for (c = 0; c < meta->nfilter; c++)
		{
			h->filter_off[c] = off;
			off += MAXALIGN((Size) meta->nnodes * gateann_filter_store_width(&meta->filter[c]));
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
	key->nnodes = meta->nnodes;
	key->tunnel_neighbors = Min(gateann_get_options(index)->tunnel_neighbors,
								Max(meta->max_neighbors, 1));
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

/* Extract one record's parts into the store. */
static void
load_record(LoadArgs *a, char *base, uint32 id, const char *rec_start,
			BlockNumber blkno, Page page, BufferAccessStrategy bas)
{
	const GateannMetaPageData *meta = a->meta;
	const GateannStoreHeader *h = &a->layout;
	uint32	   *row = (uint32 *) (base + h->neighbors_off) + (Size) id * (1 + h->tunnel_neighbors);
	uint8	   *code = (uint8 *) base + h->codes_off + (Size) id * meta->pq_subspaces;
	GateannNodeHeader hdr;
	int			n;

	if (rec_start != NULL)
	{
		/* record within one page */
		memcpy(&hdr, rec_start, sizeof(hdr));
		n = Min((int) hdr.nneighbors, h->tunnel_neighbors);
		memcpy(code, rec_start + meta->pqcode_offset, meta->pq_subspaces);
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
						 meta->pq_subspaces, (char *) code, bas);
		copy_from_record(a->index, meta, blkno, page, meta->neighbors_offset,
						 sizeof(uint32) * n, (char *) (row + 1), bas);
		if (meta->nfilter > 0)
		{
			copy_from_record(a->index, meta, blkno, page, meta->filter_offset,
							 meta->filter_size, a->filter_area, bas);
			gateann_filter_coder_code(a->coder, (const uint8 *) a->filter_area, id, a->cols);
		}
	}
	if (hdr.node_id != id)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gateann index \"%s\": record of node %u holds node %u",
						RelationGetRelationName(a->index), id, hdr.node_id),
				 errhint("REINDEX the index.")));
	row[0] = (uint32) n;
	if (hdr.flags & GATEANN_NODE_DELETED)
		((uint8 *) base + h->deleted_off)[id >> 3] |= (uint8) (1 << (id & 7));
}

/* GateannStoreLoader: fill `dest` (layout->total bytes) from the index. */
static void
load_store(void *dest, Size bytes, void *arg)
{
	LoadArgs   *a = (LoadArgs *) arg;
	const GateannMetaPageData *meta = a->meta;
	char	   *base = (char *) dest;
	BufferAccessStrategy bas;
	BlockNumber blkno;
	BlockNumber end = meta->node_start + meta->node_pages;
	uint32		id = 0;

	Assert(bytes == a->layout.total);
	memset(base, 0, bytes);
	memcpy(base, &a->layout, sizeof(GateannStoreHeader));
	if (meta->nnodes == 0)
		return;

	read_chunked(a->index, meta->codebook_start, GATEANN_PAGE_CODEBOOK, "codebook",
				 base + a->layout.codebook_off, gateann_pq_codebook_bytes(meta->dims));

	/* filter-column dictionaries, then the coder that uses them */
	if (meta->nfilter > 0)
	{
		int			c;

		read_chunked(a->index, meta->dict_start, GATEANN_PAGE_DICT, "dictionary",
					 base + a->layout.dict_off, meta->dict_bytes);
		a->coder = gateann_filter_coder_create(a->index, meta, base + a->layout.dict_off);
		for (c = 0; c < meta->nfilter; c++)
			a->cols[c] = (uint8 *) base + a->layout.filter_off[c];
		a->filter_area = palloc(Max(meta->filter_size, 1));
	}

	/* node records, one sequential pass */
	bas = GetAccessStrategy(BAS_BULKREAD);
	for (blkno = meta->node_start; blkno < end && id < meta->nnodes; blkno++)
	{
		Buffer		buf;
		Page		page;

		CHECK_FOR_INTERRUPTS();
		if (meta->records_per_page == 0 &&
			(blkno - meta->node_start) % meta->pages_per_record != 0)
			continue;
		buf = ReadBufferExtended(a->index, MAIN_FORKNUM, blkno, RBM_NORMAL, bas);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!gateann_page_is_valid(page, GATEANN_PAGE_NODES))
			corrupted(a->index, blkno, "node");
		if (meta->records_per_page > 0)
		{
			uint32		slot;

			for (slot = 0; slot < meta->records_per_page && id < meta->nnodes; slot++, id++)
				load_record(a, base, id, PageGetContents(page) + slot * meta->record_size,
							blkno, page, bas);
		}
		else
			load_record(a, base, id++, NULL, blkno, page, bas);
		UnlockReleaseBuffer(buf);
	}
	FreeAccessStrategy(bas);
	if (id != meta->nnodes)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gateann index \"%s\" has %u node records, metapage says %u",
						RelationGetRelationName(a->index), id, meta->nnodes),
				 errhint("REINDEX the index.")));
}

/* Point a handle's fields into a loaded block */
static void
store_attach(GateannStore *s, void *base)
{
	GateannStoreHeader *h = (GateannStoreHeader *) base;

	s->hdr = h;
	s->nnodes = h->nnodes;
	s->pq_subspaces = h->pq_subspaces;
	s->tunnel_neighbors = h->tunnel_neighbors;
	s->pq.dims = h->dims;
	s->pq.m = h->pq_subspaces;
	s->pq.centroids = (float *) ((char *) base + h->codebook_off);
	s->codes = (const uint8 *) base + h->codes_off;
	s->neighbors = (const uint32 *) ((char *) base + h->neighbors_off);
	s->deleted = (const uint8 *) base + h->deleted_off;
	s->dict = (const char *) base + h->dict_off;
	{
		int			c;

		for (c = 0; c < GATEANN_MAX_FILTER_COLS; c++)
			s->filter_cols[c] = h->filter_off[c] ? (const uint8 *) base + h->filter_off[c] : NULL;
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
	return s;
}

static GateannStore *
private_lookup(const GateannStoreKey *key)
{
	GateannStore **prev = &private_stores;
	GateannStore *s;

	for (s = private_stores; s != NULL; prev = &s->next, s = s->next)
	{
		if (gateann_store_key_equal(&s->key, key))
		{
			*prev = s->next;	/* move to front: most recently used */
			s->next = private_stores;
			private_stores = s;
			return s;
		}
	}
	return NULL;
}

/* Drop other private stores of the same index, and the oldest past the cap */
static void
private_evict(const GateannStoreKey *key)
{
	GateannStore **prev = &private_stores;
	GateannStore *s;
	int			count = 0;

	while ((s = *prev) != NULL)
	{
		if ((s->key.indexoid == key->indexoid && s->key.dboid == key->dboid) ||
			++count >= MAX_PRIVATE_STORES)
		{
			*prev = s->next;
			MemoryContextDelete(s->cxt);
			continue;
		}
		prev = &s->next;
	}
}

static GateannStore *
shared_handle_lookup(const GateannStoreKey *key)
{
	GateannStore *s;

	if (shared_handles_lxid != GATEANN_MY_LXID())
	{
		/* handles of an earlier transaction: their memory is gone */
		shared_handles = NULL;
		shared_handles_lxid = GATEANN_MY_LXID();
	}
	for (s = shared_handles; s != NULL; s = s->next)
		if (gateann_store_key_equal(&s->key, key))
			return s;
	return NULL;
}

GateannStore *
gateann_store_get(Relation index, const GateannMetaPageData *meta)
{
	GateannStoreKey key;
	LoadArgs	args;
	GateannStore *s;
	void	   *base;
	MemoryContext cxt;

	store_key(&key, index, meta);
	memset(&args, 0, sizeof(args));
	args.index = index;
	args.meta = meta;
	store_layout(&args.layout, meta, key.tunnel_neighbors);

	if ((s = shared_handle_lookup(&key)) != NULL)
		return s;
	if ((s = private_lookup(&key)) != NULL)
		return s;

	base = gateann_shmem_get(&key, args.layout.total, load_store, &args);
	if (base != NULL)
	{
		/* handle lives for the transaction, like the mapping's use count */
		s = store_handle(TopTransactionContext, &key, true, base);
		s->next = shared_handles;
		shared_handles = s;
		return s;
	}

	if (!gateann_shmem_available() && !warned_private)
	{
		ereport(NOTICE,
				(errmsg("gateann keeps a private copy of index stores in each backend"),
				 errhint("Add gateann to shared_preload_libraries to share one copy between all backends.")));
		warned_private = true;
	}

	private_evict(&key);
	cxt = AllocSetContextCreate(TopMemoryContext, "gateann private store",
								ALLOCSET_DEFAULT_SIZES);
	PG_TRY();
	{
		base = MemoryContextAllocHuge(cxt, args.layout.total);
		load_store(base, args.layout.total, &args);
	}
	PG_CATCH();
	{
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	s = store_handle(cxt, &key, false, base);
	s->cxt = cxt;
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
