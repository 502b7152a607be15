/*
 * shmem.c — the shared registry of in-memory stores (and the hooks that
 * lay out gateann's part of the main shared memory segment: the registry
 * and the record cache, record_cache.c).
 *
 * The registry is a fixed array in the main shared memory segment (so it
 * needs shared_preload_libraries), protected by one LWLock.  Each entry
 * names a store by its key and points at a dynamic shared memory segment
 * holding it.  The first backend to need a store marks the entry LOADING,
 * creates and fills the segment without holding the lock, pins it and
 * marks it READY; backends needing the same store meanwhile sleep on a
 * condition variable, so a store is loaded once however many backends
 * start using it together.  If the loading backend fails, the entry is
 * freed and a waiter takes over.
 *
 * Removing a store (eviction under gateann.max_shared_memory, a newer build
 * of the same index, a rebuild, TRUNCATE of its table, DROP INDEX, DROP
 * DATABASE) unpins its segment and bumps the registry's generation; the
 * memory is returned when the last backend that maps it detaches.  Backends
 * notice the generation change at the end of their next transaction (and
 * when they look a store up) and detach mappings no scan of theirs still
 * uses; a session that runs no statement keeps its mapping until it does.
 * A mapping is in use from gateann_shmem_get until the end of the
 * transaction (scans do not outlive it), which is when usage counts are
 * reset.
 *
 * A loader that fails gives its entry back (PG_CATCH); one terminated
 * (FATAL: no unwinding) gives it back on its way out (before_shmem_exit);
 * one that died otherwise (a crash restarts the server anyway) is found
 * dead by whoever meets the entry: it never counts against the budget for
 * long.
 */
#include "postgres.h"

#include "shmem.h"

#include "record_cache.h"

#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"


#define REGISTRY_ENTRIES	128

typedef enum EntryState
{
	ENTRY_FREE = 0,
	ENTRY_LOADING,
	ENTRY_READY
} EntryState;

typedef struct RegistryEntry
{
	GateannStoreKey key;
	EntryState	state;
	int			loader_pid;
	dsm_handle	handle;
	Size		bytes;
	uint64		last_used;		/* registry clock at last lookup */
	uint64		load_started;	/* registry clock when its load began */
} RegistryEntry;

typedef struct Registry
{
	LWLock	   *lock;
	ConditionVariable cv;		/* broadcast when a load ends */
	uint64		clock;
	uint32		generation;		/* bumped whenever a segment is unpinned */
	RegistryEntry entries[REGISTRY_ENTRIES];
} Registry;

/* A segment this backend has mapped */
typedef struct LocalMapping
{
	dsm_handle	handle;
	dsm_segment *seg;
	int			users;			/* scans of this transaction using it */
	struct LocalMapping *next;
} LocalMapping;

int			gateann_max_shared_memory_mb = 1024;

/*
 * gateann.load_delay: a load waits this long before it fills its segment
 * (a developer option for tests, as core's post_auth_delay is: it lets a test
 * end a backend while it is loading, which PostgreSQL 15 has no injection
 * point for).
 */
static int	gateann_load_delay_ms = 0;

static Registry *registry = NULL;
static LocalMapping *mappings = NULL;
static uint32 seen_generation = 0;

static bool loader_alive(int pid);
static bool warned_dsm = false;
static bool exit_callback_registered = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static object_access_hook_type prev_object_access_hook = NULL;

bool
gateann_store_key_equal(const GateannStoreKey *a, const GateannStoreKey *b)
{
	return a->dboid == b->dboid && a->spcoid == b->spcoid &&
		a->relfilenumber == b->relfilenumber && a->indexoid == b->indexoid &&
		a->build_id == b->build_id &&
		a->tunnel_neighbors == b->tunnel_neighbors &&
		a->in_recovery == b->in_recovery;
}

bool
gateann_shmem_available(void)
{
	return registry != NULL;
}

uint32
gateann_shmem_generation(void)
{
	uint32		gen;

	if (registry == NULL)
		return 0;
	pg_memory_barrier();
	gen = registry->generation;
	pg_memory_barrier();
	return gen;
}

static void
registry_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(Registry)));
	RequestNamedLWLockTranche("gateann", 1);
	gateann_record_cache_shmem_request();
}

static void
registry_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	registry = ShmemInitStruct("gateann registry", sizeof(Registry), &found);
	if (!found)
	{
		memset(registry, 0, sizeof(Registry));
		registry->lock = &(GetNamedLWLockTranche("gateann"))->lock;
		ConditionVariableInit(&registry->cv);
	}
	gateann_record_cache_shmem_startup();
	LWLockRelease(AddinShmemInitLock);
}

/* Unpin an entry's segment and free the entry.  Lock held exclusively. */
static void
entry_remove(RegistryEntry *e)
{
	if (e->state == ENTRY_READY)
	{
		dsm_unpin_segment(e->handle);
		registry->generation++;
	}
	memset(e, 0, sizeof(*e));
}

/*
 * A LOADING entry whose loader is gone (the loaded memory never became a
 * segment): free it, unless it is the caller's to take over.  Lock held.
 */
static bool
entry_abandoned(const RegistryEntry *e)
{
	return e->state == ENTRY_LOADING && !loader_alive(e->loader_pid);
}

/*
 * Remove, under the registry lock, every entry that matches(e, arg) selects.
 * Removing a LOADING entry frees it (its loader never made a segment).
 */
static void
remove_entries(bool (*matches) (const RegistryEntry *e, const void *arg), const void *arg)
{
	int			i;

	if (registry == NULL)
		return;
	LWLockAcquire(registry->lock, LW_EXCLUSIVE);
	for (i = 0; i < REGISTRY_ENTRIES; i++)
	{
		if (matches(&registry->entries[i], arg))
			entry_remove(&registry->entries[i]);
	}
	LWLockRelease(registry->lock);
}

static bool
loading_by_me(const RegistryEntry *e, const void *arg)
{
	return e->state == ENTRY_LOADING && e->loader_pid == MyProcPid;
}

/* before_shmem_exit: give back the entries this backend was loading */
static void
release_own_loads(int code, Datum arg)
{
	if (registry == NULL)
		return;
	remove_entries(loading_by_me, NULL);
	ConditionVariableBroadcast(&registry->cv);
}

/* The ready entries of a database's index and table (either InvalidOid: any) */
typedef struct EntryFilter
{
	Oid			dboid;
	Oid			indexoid;
	Oid			heapoid;
} EntryFilter;

static bool
ready_entry_of(const RegistryEntry *e, const void *arg)
{
	const EntryFilter *f = arg;

	return e->state == ENTRY_READY && e->key.dboid == f->dboid &&
		(!OidIsValid(f->indexoid) || e->key.indexoid == f->indexoid) &&
		(!OidIsValid(f->heapoid) || e->key.heapoid == f->heapoid);
}

/*
 * Remove the ready entries of database dboid that belong to index indexoid
 * and to table heapoid (either InvalidOid: any).
 */
static void
forget_entries(Oid dboid, Oid indexoid, Oid heapoid)
{
	EntryFilter f = {dboid, indexoid, heapoid};

	remove_entries(ready_entry_of, &f);
}

void
gateann_shmem_forget(Oid dboid, Oid indexoid)
{
	forget_entries(dboid, indexoid, InvalidOid);
}

uint64
gateann_shmem_clock(void)
{
	uint64		clock;

	if (registry == NULL)
		return 0;
	LWLockAcquire(registry->lock, LW_SHARED);
	clock = registry->clock;
	LWLockRelease(registry->lock);
	return clock;
}

/* Did the load of e begin after `since`, e not being segment `except`? */
static bool
entry_loaded_since(const RegistryEntry *e, Oid dboid, Oid indexoid, uint64 since, uint32 except)
{
	return e->state != ENTRY_FREE && e->key.dboid == dboid && e->key.indexoid == indexoid &&
		e->load_started > since && !(e->state == ENTRY_READY && e->handle == except);
}

bool
gateann_shmem_loaded_since(Oid dboid, Oid indexoid, uint64 since, uint32 except)
{
	bool		found = false;
	int			i;

	if (registry == NULL)
		return false;
	LWLockAcquire(registry->lock, LW_SHARED);
	for (i = 0; i < REGISTRY_ENTRIES && !found; i++)
	{
		RegistryEntry *e = &registry->entries[i];

		found = entry_loaded_since(e, dboid, indexoid, since, except);
	}
	LWLockRelease(registry->lock);
	return found;
}

void
gateann_shmem_forget_loaded_since(Oid dboid, Oid indexoid, uint64 since, uint32 except)
{
	if (registry == NULL)
		return;
	for (;;)
	{
		bool		loading = false;
		int			i;

		LWLockAcquire(registry->lock, LW_EXCLUSIVE);
		for (i = 0; i < REGISTRY_ENTRIES; i++)
		{
			RegistryEntry *e = &registry->entries[i];

			if (!entry_loaded_since(e, dboid, indexoid, since, except))
				continue;
			if (e->state == ENTRY_READY)
				entry_remove(e);
			else if (loader_alive(e->loader_pid))
				loading = true;
			else
				memset(e, 0, sizeof(*e));	/* its loader died */
		}
		if (!loading)
		{
			LWLockRelease(registry->lock);
			ConditionVariableBroadcast(&registry->cv);
			return;
		}
		ConditionVariablePrepareToSleep(&registry->cv);
		LWLockRelease(registry->lock);
		ConditionVariableTimedSleep(&registry->cv, 1000, PG_WAIT_EXTENSION);
		ConditionVariableCancelSleep();
	}
}

/*
 * DROP INDEX / DROP DATABASE give the memory back at once.  (A drop that
 * rolls back just costs a reload on next use.)
 */
static void
registry_object_access(ObjectAccessType access, Oid classId, Oid objectId,
					   int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	if (access == OAT_TRUNCATE && classId == RelationRelationId && registry != NULL)
	{
		/* its indexes get new files: their stores will never be used again */
		forget_entries(MyDatabaseId, InvalidOid, objectId);
		return;
	}
	if (access != OAT_DROP)
		return;
	if (classId == RelationRelationId && subId == 0)
		gateann_shmem_forget(MyDatabaseId, objectId);
	else if (classId == DatabaseRelationId)
		gateann_shmem_forget(objectId, InvalidOid);
}

static void drop_stale_mappings(void);

/*
 * At the end of every transaction no scan uses any mapping any more: the
 * mappings of stores removed meanwhile are detached now, so that their
 * memory goes back once the other sessions end a transaction too.
 */
static void
registry_xact_callback(XactEvent event, void *arg)
{
	LocalMapping *m;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	for (m = mappings; m != NULL; m = m->next)
		m->users = 0;
	if (registry != NULL && mappings != NULL)
		drop_stale_mappings();
}

void
gateann_shmem_detach_stale(void)
{
	if (registry != NULL)
		drop_stale_mappings();
}

void
gateann_shmem_define_gucs(void)
{
	DefineCustomIntVariable("gateann.max_shared_memory",
							"Shared memory all gateann in-memory stores may use together.",
							"Least recently used stores are unloaded beyond it.",
							&gateann_max_shared_memory_mb,
							1024, 1, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MB, NULL, NULL, NULL);
	DefineCustomIntVariable("gateann.load_delay",
							"Waits this long at the start of each shared store load (for tests).",
							"A developer option: a test ends a backend while it is loading.",
							&gateann_load_delay_ms,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS | GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
}

void
gateann_shmem_preload_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = registry_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = registry_shmem_startup;
	prev_object_access_hook = object_access_hook;
	object_access_hook = registry_object_access;
	RegisterXactCallback(registry_xact_callback, NULL);
}

/* Detach mappings of removed segments that no scan of ours uses. */
static void
drop_stale_mappings(void)
{
	LocalMapping **prev = &mappings;
	LocalMapping *m;

	if (registry->generation == seen_generation)
		return;
	LWLockAcquire(registry->lock, LW_SHARED);
	seen_generation = registry->generation;
	while ((m = *prev) != NULL)
	{
		bool		live = false;
		int			i;

		for (i = 0; i < REGISTRY_ENTRIES && !live; i++)
			live = registry->entries[i].state == ENTRY_READY &&
				registry->entries[i].handle == m->handle;
		if (!live && m->users == 0)
		{
			*prev = m->next;
			dsm_detach(m->seg);
			pfree(m);
			continue;
		}
		prev = &m->next;
	}
	LWLockRelease(registry->lock);
}

/* Record a segment mapped for the session, with one user; its address. */
static void *
remember_mapping(dsm_segment *seg)
{
	LocalMapping *m = MemoryContextAlloc(TopMemoryContext, sizeof(LocalMapping));

	m->handle = dsm_segment_handle(seg);
	m->seg = seg;
	m->users = 1;
	m->next = mappings;
	mappings = m;
	return dsm_segment_address(seg);
}

/* Map handle in this backend (for the session) and count a user. */
static void *
map_segment(dsm_handle handle)
{
	LocalMapping *m;
	dsm_segment *seg;

	for (m = mappings; m != NULL; m = m->next)
	{
		if (m->handle == handle)
		{
			m->users++;
			return dsm_segment_address(m->seg);
		}
	}
	seg = dsm_attach(handle);
	if (seg == NULL)
		return NULL;			/* removed meanwhile */
	dsm_pin_mapping(seg);
	return remember_mapping(seg);
}

/*
 * Is the backend that claimed a load still there?  A backend that leaves
 * gives its loads back on its way out (release_own_loads), and one that dies
 * otherwise restarts the server, which starts with an empty registry; so
 * this only has to tell a live loader from a gone one, and asks the
 * server's own list of backends rather than the kernel (a pid the kernel
 * reused for another program would look alive).
 */
static bool
loader_alive(int pid)
{
	return pid > 0 && BackendPidGetProc(pid) != NULL;
}

/*
 * Make room for `bytes` within the budget by removing least recently used
 * READY entries; false if the store alone exceeds it.  Lock held.
 */
static bool
make_room(Size bytes)
{
	Size		budget = (Size) gateann_max_shared_memory_mb * 1024 * 1024;

	if (bytes > budget)
		return false;
	for (;;)
	{
		Size		used = 0;
		RegistryEntry *lru = NULL;
		int			i;

		for (i = 0; i < REGISTRY_ENTRIES; i++)
		{
			RegistryEntry *e = &registry->entries[i];

			if (entry_abandoned(e))
				memset(e, 0, sizeof(*e));	/* its loader died: not ours to wait for */
			if (e->state == ENTRY_FREE)
				continue;
			used += e->bytes;
			if (e->state == ENTRY_READY && (lru == NULL || e->last_used < lru->last_used))
				lru = e;
		}
		if (used + bytes <= budget || lru == NULL)
			return used + bytes <= budget;
		entry_remove(lru);
	}
}

/* What registry_lookup found for a key */
typedef enum LookupResult
{
	LOOKUP_READY,				/* a ready store: *handle, *generation set */
	LOOKUP_LOADING,				/* another backend is loading it: wait */
	LOOKUP_CLAIMED,				/* nobody has it: *claimed is ours to load */
	LOOKUP_NONE					/* nobody has it, and we do not load it */
} LookupResult;

/*
 * One look at the registry for the store of key with room for `needed`
 * nodes.  With `load` (and room under the budget: make_room) a missing
 * store is claimed for loading by this backend; an older build, store
 * shape or outgrown store of the same index is removed then.  A loading
 * entry whose loader died is taken over (load) or freed.  On
 * LOOKUP_LOADING the caller sleeps on the registry's condition variable,
 * prepared under the lock so that no broadcast is missed.
 */
static LookupResult
registry_lookup(const GateannStoreKey *key, uint32 needed, Size bytes, bool load,
				GateannShmemRef *ref, RegistryEntry **claimed)
{
	RegistryEntry *entry = NULL;
	RegistryEntry *free_entry = NULL;
	int			i;

	LWLockAcquire(registry->lock, LW_EXCLUSIVE);
	for (i = 0; i < REGISTRY_ENTRIES; i++)
	{
		RegistryEntry *e = &registry->entries[i];

		/* a load of another store whose loader died: gone for good */
		if (entry_abandoned(e) && !gateann_store_key_equal(&e->key, key))
			memset(e, 0, sizeof(*e));
		if (e->state == ENTRY_FREE)
		{
			if (free_entry == NULL)
				free_entry = e;
			continue;
		}
		if (gateann_store_key_equal(&e->key, key) &&
			(e->key.capacity >= needed || e->state == ENTRY_LOADING))
		{
			/* (a store being loaded is waited for, then checked again) */
			entry = e;
			break;
		}
		/* an older build, store shape or outgrown store of the index */
		if (load && e->state == ENTRY_READY && e->key.dboid == key->dboid &&
			e->key.indexoid == key->indexoid)
		{
			entry_remove(e);
			if (free_entry == NULL)
				free_entry = e;
		}
	}

	if (entry != NULL && entry->state == ENTRY_READY)
	{
		entry->last_used = ++registry->clock;
		ref->handle = entry->handle;
		/* removing the entry bumps it, under the exclusive lock we hold */
		ref->generation = registry->generation;
		LWLockRelease(registry->lock);
		return LOOKUP_READY;
	}
	if (entry != NULL && loader_alive(entry->loader_pid))
	{
		ConditionVariablePrepareToSleep(&registry->cv);
		LWLockRelease(registry->lock);
		return LOOKUP_LOADING;
	}
	if (entry != NULL && load)
	{
		entry->loader_pid = MyProcPid;	/* its loader died: take over */
		*claimed = entry;
		LWLockRelease(registry->lock);
		return LOOKUP_CLAIMED;
	}
	if (entry != NULL)
		memset(entry, 0, sizeof(*entry));	/* its loader died; we only look */
	else if (load && free_entry != NULL && make_room(bytes))
	{
		entry = free_entry;
		entry->key = *key;
		entry->state = ENTRY_LOADING;
		entry->loader_pid = MyProcPid;
		entry->bytes = bytes;
		entry->last_used = ++registry->clock;
		entry->load_started = entry->last_used;
		*claimed = entry;
		LWLockRelease(registry->lock);
		return LOOKUP_CLAIMED;
	}
	LWLockRelease(registry->lock);
	ConditionVariableBroadcast(&registry->cv);
	return LOOKUP_NONE;
}

/* Give back an entry we claimed but did not load. */
static void
release_claim(RegistryEntry *entry)
{
	LWLockAcquire(registry->lock, LW_EXCLUSIVE);
	memset(entry, 0, sizeof(*entry));
	LWLockRelease(registry->lock);
	ConditionVariableBroadcast(&registry->cv);
}

/* gateann.load_delay: hold the load, interruptibly (a termination leaves through release_own_loads) */
static void
load_delay(void)
{
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													gateann_load_delay_ms);
	long		left;

	while ((left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), until)) > 0)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 left, WAIT_EVENT_PG_SLEEP);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Load the store of the entry we claimed into a new segment and publish
 * it; its address, or NULL if no segment could be created (the claim is
 * given back: the caller keeps a private copy).
 */
static void *
load_claimed(RegistryEntry *entry, Size bytes, GateannStoreLoader loader, void *arg,
			 GateannShmemRef *ref)
{
	dsm_segment *seg;

	if (!exit_callback_registered)
	{
		before_shmem_exit(release_own_loads, 0);
		exit_callback_registered = true;
	}
	seg = dsm_create(bytes, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (seg == NULL)
	{
		release_claim(entry);
		if (!warned_dsm)
			ereport(WARNING,
					(errmsg("gateann could not create a dynamic shared memory segment of %zu bytes; using a private copy of the index stores",
							bytes),
					 errhint("Raise max_connections-based DSM slots or dynamic_shared_memory limits (e.g. the size of /dev/shm in containers).")));
		warned_dsm = true;
		return NULL;
	}

	PG_TRY();
	{
		if (gateann_load_delay_ms > 0)
			load_delay();
		loader(dsm_segment_address(seg), bytes, arg);
	}
	PG_CATCH();
	{
		release_claim(entry);
		PG_RE_THROW();
	}
	PG_END_TRY();

	dsm_pin_segment(seg);
	dsm_pin_mapping(seg);
	LWLockAcquire(registry->lock, LW_EXCLUSIVE);
	entry->handle = dsm_segment_handle(seg);
	entry->state = ENTRY_READY;
	entry->loader_pid = 0;
	ref->handle = entry->handle;
	ref->generation = registry->generation;
	LWLockRelease(registry->lock);
	ConditionVariableBroadcast(&registry->cv);

	return remember_mapping(seg);
}

void *
gateann_shmem_get(const GateannStoreKey *key, uint32 needed, Size bytes,
				  GateannStoreLoader loader, void *arg, GateannShmemRef *ref)
{
	if (registry == NULL)
		return NULL;
	drop_stale_mappings();

	for (;;)
	{
		RegistryEntry *claimed;
		void	   *addr;

		switch (registry_lookup(key, needed, bytes, loader != NULL, ref, &claimed))
		{
			case LOOKUP_READY:
				addr = map_segment(ref->handle);
				if (addr != NULL)
					return addr;
				break;			/* evicted between the lock and the attach */
			case LOOKUP_LOADING:
				ConditionVariableTimedSleep(&registry->cv, 1000, PG_WAIT_EXTENSION);
				ConditionVariableCancelSleep();
				break;
			case LOOKUP_CLAIMED:
				return load_claimed(claimed, bytes, loader, arg, ref);
			case LOOKUP_NONE:
				if (loader != NULL)
					ereport(NOTICE,
							(errmsg("gateann: the in-memory stores of this index (%zu kB) do not fit gateann.max_shared_memory (%d MB) or its registry; using a private copy",
									(bytes + 1023) / 1024, gateann_max_shared_memory_mb),
							 errhint("Raise gateann.max_shared_memory: a private copy larger than it is read again by every transaction.")));
				return NULL;
		}
		CHECK_FOR_INTERRUPTS();
	}
}

bool
gateann_shmem_lookup(const GateannStoreKey *key, Size *bytes)
{
	bool		found = false;
	int			i;

	if (registry == NULL)
		return false;
	LWLockAcquire(registry->lock, LW_SHARED);
	for (i = 0; i < REGISTRY_ENTRIES; i++)
	{
		RegistryEntry *e = &registry->entries[i];

		if (e->state == ENTRY_READY && gateann_store_key_equal(&e->key, key))
		{
			*bytes = e->bytes;
			found = true;
			break;
		}
	}
	LWLockRelease(registry->lock);
	return found;
}
