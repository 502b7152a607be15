/*
 * store.h — the in-memory stores a search needs: PQ codebook and the PQ code
 * of every node.
 *
 * They are rebuilt from the index by one sequential pass and cached per
 * backend, keyed by the index's physical identity and build id, so a
 * REINDEX, TRUNCATE or VACUUM FULL (new relfilenode or new build id) is
 * never served stale data.  Shared-memory stores replace this cache in the
 * engine issue.
 */
#ifndef GATEANN_STORE_H
#define GATEANN_STORE_H

#include "gateann.h"
#include "pq.h"

typedef struct GateannStore
{
	/* identity */
	Oid			indexoid;
	Oid			dboid;
	Oid			spcoid;
	Oid			relfilenumber;
	uint64		build_id;

	uint32		nnodes;
	int			pq_subspaces;
	GateannPQ	pq;				/* codebook */
	uint8	   *codes;			/* nnodes * pq_subspaces */
	Size		pq_bytes;		/* codebook + codes */

	MemoryContext cxt;
	struct GateannStore *next;
} GateannStore;

/*
 * The store of `index` matching `meta` (read by the caller), loading it if
 * this backend has none.  Valid until the next call for another index may
 * evict it: callers use it within one scan and look it up again per rescan.
 */
extern GateannStore *gateann_store_get(Relation index, const GateannMetaPageData *meta);

/* This backend's store for index if loaded and current, else NULL. */
extern GateannStore *gateann_store_lookup(Relation index, const GateannMetaPageData *meta);

#endif							/* GATEANN_STORE_H */
