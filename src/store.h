/*
 * store.h — the in-memory stores a search needs, rebuilt from the index by
 * one sequential pass over its node pages (GateANN §3.2):
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
 * backend, or in a backend's private memory when it cannot.
 */
#ifndef GATEANN_STORE_H
#define GATEANN_STORE_H

#include "gateann.h"
#include "pq.h"
#include "shmem.h"

typedef struct GateannStoreHeader
{
	uint32		magic;
	uint32		nnodes;
	int32		dims;
	int32		pq_subspaces;
	int32		tunnel_neighbors;	/* R_max */
	Size		codebook_off;
	Size		codes_off;
	Size		neighbors_off;
	Size		deleted_off;
	Size		dict_off;		/* filter-column dictionaries */
	Size		filter_off[GATEANN_MAX_FILTER_COLS];	/* per column codes */
	Size		total;
} GateannStoreHeader;

/* A backend's handle on a store (shared or private) */
typedef struct GateannStore
{
	GateannStoreKey key;
	bool		shared;
	Size		bytes;
	GateannStoreHeader *hdr;

	uint32		nnodes;
	int			pq_subspaces;
	int			tunnel_neighbors;	/* R_max */
	GateannPQ	pq;				/* codebook */
	const uint8 *codes;
	const uint32 *neighbors;	/* stride 1 + R_max */
	const uint8 *deleted;		/* bitmap */
	const char *dict;			/* filter-column dictionaries */
	const uint8 *filter_cols[GATEANN_MAX_FILTER_COLS]; /* filter store */

	MemoryContext cxt;			/* private copies only */
	struct GateannStore *next;
} GateannStore;

/* Sizes of each part, for gateann_index_info */
extern Size gateann_store_pq_bytes(uint32 nnodes, int dims, int m);
extern Size gateann_store_neighbor_bytes(uint32 nnodes, int r_max);
extern Size gateann_store_filter_bytes(const GateannMetaPageData *meta);

/*
 * The store of `index` matching `meta` (read by the caller) and the index's
 * current tunnel_neighbors, loading it if needed.  Valid until the end of
 * the transaction.
 */
extern GateannStore *gateann_store_get(Relation index, const GateannMetaPageData *meta);

/*
 * Is the current store of `index` loaded (shared, or privately in this
 * backend)?  Sets *shared and *bytes when it is.
 */
extern bool gateann_store_loaded(Relation index, const GateannMetaPageData *meta,
								 bool *shared, Size *bytes);

static inline bool
gateann_store_is_deleted(const GateannStore *s, uint32 id)
{
	return (s->deleted[id >> 3] & (1 << (id & 7))) != 0;
}

/* Neighbor list of id in the neighbor store: count in *n. */
static inline const uint32 *
gateann_store_neighbors(const GateannStore *s, uint32 id, int *n)
{
	const uint32 *row = s->neighbors + (Size) id * (1 + s->tunnel_neighbors);

	*n = (int) row[0];
	return row + 1;
}

#endif							/* GATEANN_STORE_H */
