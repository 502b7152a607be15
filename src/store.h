/*
 * store.h — the in-memory stores a search needs, rebuilt from the index by
 * one sequential pass over its node pages:
 *
 *   PQ codebook and the PQ code of every node      (N * M bytes)
 *   neighbor store: the first R_max neighbors of every node, fixed stride
 *     (1 + R_max) * 4 bytes: [count, id0, id1, ...]   (N * (1+R_max) * 4)
 *   filter store: one "deleted" bit per node (N / 8), and per filter
 *     column one byte (scalar) or 64 Bloom bits (label sets) per node,
 *     with the column dictionaries (filter.c)
 *
 * All of it is one contiguous block laid out by GateannStoreHeader, so it
 * can live in a dynamic shared memory segment (shmem.c) shared by every
 * backend, or in a backend's private memory when it cannot.  The block has
 * room for more nodes than the index has (inserts fill it in place), a
 * "present" bit per node saying its entries are complete, and per node
 * block the LSN the file must have reached before a direct read of it can
 * be trusted (the loader sets it to the page's LSN in shared
 * buffers, writers raise it).
 */
#ifndef GATEANN_STORE_H
#define GATEANN_STORE_H

#include "gateann.h"
#include "pq.h"
#include "search.h"
#include "shmem.h"

#include "access/xlogdefs.h"
#include "port/atomics.h"

typedef struct GateannStoreHeader
{
	uint32		magic;
	uint32		nnodes;			/* nodes loaded from the pages */
	pg_atomic_uint32 caught_up;	/* every node below this is present */
	pg_atomic_uint64 reuse_seen;	/* metapage reuse_count refreshed up to */
	pg_atomic_uint32 refreshing;	/* a backend is refreshing reused slots */
	uint32		capacity;		/* nodes there is room for (inserts) */
	uint32		node_blocks;	/* page marks: node blocks of capacity nodes */
	int32		dims;
	int32		pq_subspaces;
	int32		tunnel_neighbors;	/* R_max */
	Size		codebook_off;
	Size		codes_off;
	Size		neighbors_off;
	Size		present_off;
	Size		tail_off;
	Size		deleted_off;
	Size		marks_off;
	Size		hints_off;
	Size		rowlocks_off;
	Size		dict_off;		/* filter-column dictionaries */
	Size		filter_off[GATEANN_MAX_FILTER_COLS];	/* per column codes */
	Size		total;
} GateannStoreHeader;

/*
 * Neighbor-store rows are rewritten in place by inserts; a row is read and
 * written under one of these sequence locks (even: stable, odd: being
 * written), so a reader never uses a torn row.
 */
#define GATEANN_STORE_ROW_LOCKS	1024

/* A backend's handle on a store (shared or private) */
typedef struct GateannStore
{
	GateannStoreKey key;
	bool		shared;
	Size		bytes;
	GateannStoreHeader *hdr;

	uint32		capacity;		/* node ids below it have room in the store */
	int			pq_subspaces;
	Size		code_bytes;		/* of one PQ code (pq.h) */
	int			tunnel_neighbors;	/* R_max */
	GateannPQ	pq;				/* codebook */
	uint8	   *codes;
	uint32	   *neighbors;		/* stride 1 + R_max */
	pg_atomic_uint32 *present;	/* bitmap: node's entries are complete */
	pg_atomic_uint32 *tail;		/* bitmap: a tail record's filter codes are
								 * complete (never present: not in the graph) */
	pg_atomic_uint32 *deleted;	/* bitmap: node is known deleted */
	pg_atomic_uint64 *marks;	/* per node block: LSN the file must reach */
	pg_atomic_uint32 *hints;	/* per node block: a buffer that held it
								 * once (gateann_pin_resident), or 0 */
	pg_atomic_uint32 *rowlocks;
	const char *dict;			/* filter-column dictionaries */
	uint8	   *filter_cols[GATEANN_MAX_FILTER_COLS];	/* filter store */

	GateannShmemRef ref;		/* shared: its segment, and the registry's
								 * generation while it was registered */
	MemoryContext cxt;			/* private copies only */
	LocalTransactionId used_lxid;	/* private: last transaction that got it */
	bool		check_exists;	/* private: its index may have been dropped */
	struct GateannStore *next;
} GateannStore;

/* Sizes of each part, for gateann_index_info */
extern Size gateann_store_pq_bytes(uint32 nnodes, int dims, int m);
extern Size gateann_store_neighbor_bytes(uint32 nnodes, int r_max);
extern Size gateann_store_filter_bytes(const GateannMetaPageData *meta);

/*
 * The store of `index` matching `meta` (read by the caller) and the index's
 * current tunnel_neighbors, with every node of meta->nnodes present, loading
 * or growing it if needed.  Valid until the end of the transaction.
 */
extern GateannStore *gateann_store_get(Relation index, const GateannMetaPageData *meta);
extern char *gateann_store_read_dictionaries(Relation index, const GateannMetaPageData *meta);

/* A (re)build of the index: its stores will never be used again */
extern void gateann_store_forget_index(Relation index);

/*
 * For writers that mirror their page changes into the store they got (the
 * shared registry behind it, shmem.c, is store.c's alone).  A shared store
 * of the index that began loading after the writer got its own (evicted
 * meanwhile, or one the writer could not use: it kept a private copy) may
 * have read pages from before the writer's changes.  A writer notes
 * gateann_store_clock() before it calls gateann_store_get, and when its
 * pages are written:
 *
 * - an insert applies its changes again to every store
 *   gateann_store_next_reloaded returns (NULL when none is left; it waits
 *   for a store being loaded, it never loads one; `written` is the store
 *   already written, or NULL; *since moves on with each call);
 * - VACUUM drops such stores (gateann_store_reloaded_since,
 *   gateann_store_forget_reloaded_since, `own` being its own store, which it
 *   may have loaded itself: not counted): the next user loads one from the
 *   pages as they are.
 */
extern uint64 gateann_store_clock(void);
extern GateannStore *gateann_store_next_reloaded(Relation index,
												 const GateannMetaPageData *meta,
												 const GateannStore *written,
												 uint64 *since);
extern bool gateann_store_reloaded_since(Relation index, uint64 since, const GateannStore *own);
extern void gateann_store_forget_reloaded_since(Relation index, uint64 since,
												const GateannStore *own);

/*
 * Is the current store of `index` loaded (shared, or privately in this
 * backend)?  Sets *shared and *bytes when it is.
 */
extern bool gateann_store_loaded(Relation index, const GateannMetaPageData *meta,
								 bool *shared, Size *bytes);

/* ---- reading ------------------------------------------------------------ */

/* Node id's PQ code */
static inline const uint8 *
gateann_store_code(const GateannStore *s, uint32 id)
{
	return s->codes + (Size) id * s->code_bytes;
}

/* Does the store hold node id's entries (PQ code, row, filter codes)? */
static inline bool
gateann_store_has(const GateannStore *s, uint32 id)
{
	bool		has;

	if (id >= s->capacity)
		return false;
	has = (pg_atomic_read_u32(&s->present[id >> 5]) & (1U << (id & 31))) != 0;
	pg_read_barrier();			/* entries are read after the bit */
	return has;
}

/*
 * Is id a tail record the store holds (its filter codes)?  Tail records
 * are never present: every walk, list and pass over present ids leaves
 * them out (gateann.h, GATEANN_NODE_TAIL).
 */
static inline bool
gateann_store_is_tail(const GateannStore *s, uint32 id)
{
	bool		tail;

	if (id >= s->capacity)
		return false;
	tail = (pg_atomic_read_u32(&s->tail[id >> 5]) & (1U << (id & 31))) != 0;
	pg_read_barrier();			/* filter codes are read after the bit */
	return tail;
}

static inline bool
gateann_store_is_deleted(const GateannStore *s, uint32 id)
{
	return (pg_atomic_read_u32(&s->deleted[id >> 5]) & (1U << (id & 31))) != 0;
}

/* Hint that id's PQ code will be read soon. */
static inline void
gateann_store_prefetch_code(const GateannStore *s, uint32 id)
{
	gateann_prefetch_range(gateann_store_code(s, id), s->code_bytes);
}

/* id's row of the neighbor store: [count, id0, id1, ...] */
static inline uint32 *
gateann_store_row(const GateannStore *s, uint32 id)
{
	return s->neighbors + (Size) id * (1 + s->tunnel_neighbors);
}

/* Hint that id's neighbor-store row will be read soon. */
static inline void
gateann_store_prefetch_row(const GateannStore *s, uint32 id)
{
	if (id < s->capacity)
		gateann_prefetch_range(gateann_store_row(s, id),
							   sizeof(uint32) * (1 + s->tunnel_neighbors));
}

/*
 * The entry points of meta the store holds, by the PQ distance table: ids
 * into out (room for GATEANN_MAX_ENTRIES), the nearest `sorted` of them
 * first, in order (ties by id), the rest after them in no order.  Returns
 * how many.
 */
extern int	gateann_store_entries_by_distance(const GateannStore *s,
											  const GateannMetaPageData *meta,
											  const float *table, uint32 *out, int sorted);

/*
 * gateann_reach's view of the stores (reach.h): a node's neighbor-store
 * row, what a tunneling search follows; -1 for an id the store does not
 * hold.  arg is the GateannStore.
 */
extern int	gateann_store_row_neighbors(void *arg, uint32 id, uint32 *out, int max);

/*
 * Mark in `reached` (a zeroed bitmap over meta->nnodes ids) every node a
 * walk over the store's rows reaches from the index's entry points and
 * return how many live nodes (present, not deleted) it did not reach.
 */
extern uint32 gateann_store_unreachable(const GateannStore *s,
										const GateannMetaPageData *meta, uint8 *reached);

/* Copy id's row of the neighbor store into buf (R_max ids); its length. */
extern int	gateann_store_copy_neighbors(const GateannStore *s, uint32 id, uint32 *buf);

/*
 * Node block `blkno_in_nodes` (counted from the metapage's node_start) read
 * from the file is current if its page LSN is at least this.
 */
static inline XLogRecPtr
gateann_store_block_mark(const GateannStore *s, uint32 blkno_in_nodes)
{
	if (blkno_in_nodes >= s->hdr->node_blocks)
		return (XLogRecPtr) PG_UINT64_MAX;	/* unknown block: use the buffer */
	return (XLogRecPtr) pg_atomic_read_u64(&s->marks[blkno_in_nodes]);
}

/* ---- writing (insert.c, vacuum.c) --------------------------------------- */

/* Set id's PQ code and filter codes (from its record's filter area). */
extern void gateann_store_set_node(GateannStore *s, Relation index,
								   const GateannMetaPageData *meta, uint32 id,
								   const char *record);

/*
 * The same in two steps, for a writer that holds buffer locks when it sets
 * the node: coding a record's filters calls the columns' comparison and
 * hash functions (catalog lookups, allocations), so it is done before the
 * locks; putting the codes is copying.
 */
typedef struct GateannStoreFilterCodes
{
	uint8		col[GATEANN_MAX_FILTER_COLS][sizeof(uint64)];
} GateannStoreFilterCodes;

extern void gateann_store_code_filters(GateannStore *s, Relation index,
									   const GateannMetaPageData *meta, const char *record,
									   GateannStoreFilterCodes *codes);
extern void gateann_store_put_node(GateannStore *s, const GateannMetaPageData *meta, uint32 id,
								   const char *record, const GateannStoreFilterCodes *codes);

/* Rewrite id's neighbor-store row from its full neighbor list. */
extern void gateann_store_set_neighbors(GateannStore *s, uint32 id,
										const uint32 *nbrs, int n);

/* Publish id: its entries are complete (after set_node/set_neighbors). */
extern void gateann_store_set_present(GateannStore *s, uint32 id);

/* Publish id as a tail record: its filter codes are complete (after set_node). */
extern void gateann_store_set_tail(GateannStore *s, uint32 id);

extern void gateann_store_set_deleted(GateannStore *s, uint32 id);

/* A slot was reused: its old deleted bit goes (before set_present). */
extern void gateann_store_clear_deleted(GateannStore *s, uint32 id);

/* VACUUM freed id's slot: no longer present (nor a tail record), empty row. */
extern void gateann_store_set_free(GateannStore *s, uint32 id);

/*
 * Node page `buf` (still exclusively locked) was changed under WAL: raise
 * its block mark to the page's LSN.  Nothing is written out: where marks
 * cannot help (no WAL, a private copy, a standby, local buffers) scans read
 * through the buffer manager (scan.c).
 */
extern void gateann_store_page_changed(GateannStore *s, const GateannMetaPageData *meta,
									   Buffer buf);

/* WAL-log a record edit (page.h) and publish its pages as above; still locked. */
struct GateannRecordEdit;
extern void gateann_store_edit_finish(GateannStore *s, const GateannMetaPageData *meta,
									  struct GateannRecordEdit *ed);

/*
 * Rewrite id's neighbor list (its record locked in ed by the caller,
 * gateann_record_lock) under one WAL record, keeping `flags`, and mirror it
 * into the store's row while the record is still locked: the store changes
 * in the same order as the pages.
 */
extern void gateann_store_write_list(GateannStore *s, const GateannMetaPageData *meta,
									 Relation index, struct GateannRecordEdit *ed, uint32 id,
									 uint16 flags, const uint32 *list, int n);

/*
 * A writer changed node block blkno_in_nodes; the file holds the change once
 * its page LSN reaches lsn.  Call while the page is still locked.
 */
extern void gateann_store_mark_block(GateannStore *s, uint32 blkno_in_nodes,
									 XLogRecPtr lsn);

#endif							/* GATEANN_STORE_H */
