/*
 * shmem.h — where the in-memory stores of an index live.
 *
 * With shared_preload_libraries = 'gateann', each index's stores exist once
 * for all backends, in a dynamic shared memory segment found through a small
 * registry in the main shared memory segment.  Without it, or when a
 * segment cannot be created, each backend keeps a private copy.
 *
 * A store is identified by the index's physical identity (database,
 * tablespace, relfilenumber), its build id, and the number of neighbors per
 * node kept in the neighbor store.  REINDEX, TRUNCATE, VACUUM FULL (new
 * relfilenumber, new build id) therefore never find a stale store.  A store
 * has room for `capacity` nodes; inserts fill it in place (insert.c), and
 * once the index outgrows it the next user loads a larger one.  Stores of
 * dropped indexes and databases, outgrown ones, and least recently used ones
 * past gateann.max_shared_memory, are unpinned and their memory given back
 * once no backend maps them; every such removal bumps a generation counter,
 * which writers check to learn that the store they updated is gone.
 */
#ifndef GATEANN_SHMEM_H
#define GATEANN_SHMEM_H

#include "gateann.h"

/* GUC gateann.max_shared_memory, in MB */
extern int	gateann_max_shared_memory_mb;

/* Is the registry available (library preloaded)? */
extern bool gateann_shmem_available(void);

/* From _PG_init: always, and when loaded through shared_preload_libraries. */
extern void gateann_shmem_define_gucs(void);
extern void gateann_shmem_preload_init(void);

/* Identity of a store */
typedef struct GateannStoreKey
{
	Oid			dboid;
	Oid			spcoid;
	Oid			relfilenumber;
	Oid			indexoid;
	uint64		build_id;
	int32		tunnel_neighbors;
	bool		in_recovery;	/* loaded during recovery: its block marks
								 * miss what replay changed (src/README) */
	uint32		capacity;		/* nodes the store has room for (not identity) */
	Oid			heapoid;		/* the index's table (not identity: TRUNCATE) */
} GateannStoreKey;

/*
 * Same index, same build, same neighbor-store shape, loaded on the same side
 * of promotion (capacity ignored)
 */
extern bool gateann_store_key_equal(const GateannStoreKey *a, const GateannStoreKey *b);

/*
 * Fill `bytes` of memory for `key` (the caller's loader), returning false
 * if it could not (then the store is not published).
 */
typedef void (*GateannStoreLoader) (void *dest, Size bytes, void *arg);

/*
 * Which registered segment a backend found, and when (see
 * gateann_shmem_generation): until the generation moves on, it has not been
 * removed.
 */
typedef struct GateannShmemRef
{
	uint32		generation;
	uint32		handle;			/* its dsm_handle */
} GateannShmemRef;

/*
 * The shared copy of the store for key with room for at least `needed`
 * nodes: mapped into this backend, loaded by `loader` into a segment of
 * `bytes` (for key->capacity nodes; by exactly one backend, others wait) if
 * nobody has it yet.  A store of the same index that is too small is
 * removed first.
 * Returns NULL if shared memory cannot be used (not preloaded, segment
 * creation failed: then a WARNING was raised once); the caller keeps a
 * private copy instead.  With loader NULL it only finds a store (waiting
 * for one being loaded) and returns NULL when there is none.  *ref is set
 * to the segment found and the generation while it was registered.
 */
extern void *gateann_shmem_get(const GateannStoreKey *key, uint32 needed, Size bytes,
							   GateannStoreLoader loader, void *arg, GateannShmemRef *ref);

/*
 * Bumped whenever a shared store is removed: a handle on a store found at
 * an earlier generation must be looked up again before it is trusted.
 */
extern uint32 gateann_shmem_generation(void);

/*
 * The registry's clock, and: forget the shared stores of an index whose
 * load began after `since` (a value of the clock), but the segment
 * `except` (the writer's own; 0: none), waiting for those being loaded to
 * finish first.  For a writer (VACUUM) that mirrors its page changes into
 * the store it got: a store loaded meanwhile may have read pages from
 * before some of them, and the next user then loads one from the pages as
 * they are.
 */
extern uint64 gateann_shmem_clock(void);
extern void gateann_shmem_forget_loaded_since(Oid dboid, Oid indexoid, uint64 since,
											  uint32 except);
/* Has a store of the index other than `except` begun loading after `since`? */
extern bool gateann_shmem_loaded_since(Oid dboid, Oid indexoid, uint64 since, uint32 except);

/* Is a shared store for key loaded (for gateann_index_info)?  Its size. */
extern bool gateann_shmem_lookup(const GateannStoreKey *key, Size *bytes);

/* Forget the shared stores of an index (DROP), or with InvalidOid of every
 * index of the database (DROP DATABASE). */
extern void gateann_shmem_forget(Oid dboid, Oid indexoid);

/* Detach this backend's mappings of removed stores no scan of it uses */
extern void gateann_shmem_detach_stale(void);

#endif							/* GATEANN_SHMEM_H */
