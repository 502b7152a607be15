/*
 * record_cache.c — node records in a server-wide shared-memory budget.
 *
 * Layout: an arena written as a log, and a set-associative table that finds
 * a record's copy in it.
 *
 * The arena is gateann.record_cache_size bytes used as a ring.  `head`
 * counts every byte ever reserved; a writer reserves the room of one copy
 * with an atomic fetch-and-add (its position is the old head) and copies
 * the record to position mod size.  The copy at position p is intact while
 * head <= p + size: once a later reservation ends beyond that, the ring has
 * come round to it.  Eviction is therefore first in, first out by bytes,
 * and a copy that a scan reads while it is in the oldest quarter of the
 * ring is written again at the head (second chance): records scans keep
 * using stay, those they stopped using leave.
 *
 * The table has 8 ways per set; a set's ways are changed under one of
 * CACHE_LOCKS LWLocks (set mod CACHE_LOCKS), held only to copy a way in or
 * out: no I/O, no copying of records, no loop longer than the 8 ways.  A
 * writer fills its arena room first and publishes the way after (the lock
 * release orders the two).  A reader copies the way under the shared lock,
 * releases it, copies the record out of the arena, then reads head again
 * behind a read barrier: if the ring reached the copy meanwhile, it is a
 * miss.  The caller's callback then checks the copy like a read of the file
 * (node id, check, block marks: record_cache.h), so a torn or stale copy is
 * never used; a stale one is dropped.
 *
 * A way that names no live copy (empty, or overrun by the ring) is free;
 * when none of a set's ways is, the oldest copy's way is taken: it would be
 * overrun first.
 */
#include "postgres.h"

#include "record_cache.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#define CACHE_WAYS			8
#define CACHE_LOCKS			128
#define CACHE_TRANCHE		"gateann record cache"
/* arena bytes per way: room for copies of 512 bytes or more in every way */
#define CACHE_BYTES_PER_WAY	512
/* a record longer than this share of the arena is not kept */
#define CACHE_MAX_SHARE		16

typedef struct CacheWay
{
	uint64		build_id;
	Oid			dboid;
	uint32		relfilenumber;
	uint32		node_id;
	uint32		len;			/* 0: empty */
	uint64		pos;			/* in the log: bytes reserved before it */
	XLogRecPtr	lsn;			/* oldest LSN of the pages it was copied from */
} CacheWay;

typedef struct CacheHeader
{
	uint64		size;			/* arena bytes */
	uint32		nsets;
	pg_atomic_uint64 head;
	pg_atomic_uint64 lookups;
	pg_atomic_uint64 hits;
	pg_atomic_uint64 stale;
	pg_atomic_uint64 stores;
	LWLockPadded *locks;
	/* then nsets * CACHE_WAYS ways, then the arena */
} CacheHeader;

/* -1: shared_buffers / 8; in MB */
static int	record_cache_size_mb = -1;
static bool record_cache_on = true;

static CacheHeader *cache = NULL;
static CacheWay *ways = NULL;
static char *arena = NULL;

/* ------------------------------------------------------------- sizing */

static uint64
arena_bytes(void)
{
	uint64		mb;

	if (record_cache_size_mb >= 0)
		mb = (uint64) record_cache_size_mb;
	else
		mb = ((uint64) NBuffers * BLCKSZ / 8) >> 20;
	return mb << 20;
}

static uint32
set_count(uint64 size)
{
	return (uint32) Max(size / (CACHE_BYTES_PER_WAY * CACHE_WAYS), 1);
}

static Size
shmem_bytes(void)
{
	uint64		size = arena_bytes();

	if (size == 0)
		return 0;
	return MAXALIGN(sizeof(CacheHeader)) +
		MAXALIGN(sizeof(CacheWay) * CACHE_WAYS * (Size) set_count(size)) + size;
}

void
gateann_record_cache_define_gucs(void)
{
	DefineCustomBoolVariable("gateann.record_cache",
							 "Whether gateann scans use the shared record cache.",
							 "Off: every record not in shared buffers is read from the files.",
							 &record_cache_on,
							 true,
							 PGC_USERSET, 0, NULL, NULL, NULL);

	/*
	 * The cache is laid out at server start: its size exists only for a
	 * library loaded by shared_preload_libraries (a postmaster setting
	 * cannot be defined later, and would mean nothing there).
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("gateann.record_cache_size",
							"Shared memory for copies of index records that scans read from the files.",
							"-1 uses an eighth of shared_buffers; 0 turns the cache off.  Needs shared_preload_libraries.",
							&record_cache_size_mb,
							-1, -1, INT_MAX / 2,
							PGC_POSTMASTER, GUC_UNIT_MB, NULL, NULL, NULL);
}

void
gateann_record_cache_shmem_request(void)
{
	if (shmem_bytes() == 0)
		return;
	RequestAddinShmemSpace(shmem_bytes());
	RequestNamedLWLockTranche(CACHE_TRANCHE, CACHE_LOCKS);
}

/* Caller holds AddinShmemInitLock */
void
gateann_record_cache_shmem_startup(void)
{
	uint64		size = arena_bytes();
	uint32		nsets;
	bool		found;
	char	   *base;

	if (size == 0)
		return;
	nsets = set_count(size);
	base = ShmemInitStruct("gateann record cache", shmem_bytes(), &found);
	cache = (CacheHeader *) base;
	ways = (CacheWay *) (base + MAXALIGN(sizeof(CacheHeader)));
	arena = (char *) ways + MAXALIGN(sizeof(CacheWay) * CACHE_WAYS * (Size) nsets);
	if (!found)
	{
		cache->size = size;
		cache->nsets = nsets;
		pg_atomic_init_u64(&cache->head, 0);
		pg_atomic_init_u64(&cache->lookups, 0);
		pg_atomic_init_u64(&cache->hits, 0);
		pg_atomic_init_u64(&cache->stale, 0);
		pg_atomic_init_u64(&cache->stores, 0);
		cache->locks = GetNamedLWLockTranche(CACHE_TRANCHE);
		memset(ways, 0, sizeof(CacheWay) * CACHE_WAYS * (Size) nsets);
	}
}

bool
gateann_record_cache_usable(void)
{
	return cache != NULL && record_cache_on;
}

/* ------------------------------------------------------------- lookup */

static uint32
set_of(const GateannRecordCacheKey *key, uint32 id)
{
	uint64		h = hash_bytes_uint32_extended(id, key->build_id);

	h = hash_combine64(h, hash_bytes_uint32_extended(key->relfilenumber, key->dboid));
	return (uint32) (h % cache->nsets);
}

static inline LWLock *
lock_of(uint32 set)
{
	return &cache->locks[set % CACHE_LOCKS].lock;
}

static inline bool
way_names(const CacheWay *w, const GateannRecordCacheKey *key, uint32 id)
{
	return w->len > 0 && w->node_id == id && w->build_id == key->build_id &&
		w->relfilenumber == key->relfilenumber && w->dboid == key->dboid;
}

/* Is the copy at pos of len bytes still whole, with the ring's head at head? */
static inline bool
intact(uint64 pos, uint32 len, uint64 head)
{
	return len > 0 && head <= pos + cache->size;
}

static void
arena_copy_out(uint64 pos, uint32 len, char *dst)
{
	uint64		off = pos % cache->size;
	uint64		first = Min((uint64) len, cache->size - off);

	memcpy(dst, arena + off, first);
	if (first < len)
		memcpy(dst + first, arena, len - first);
}

static void
arena_copy_in(uint64 pos, const char *src, uint32 len)
{
	uint64		off = pos % cache->size;
	uint64		first = Min((uint64) len, cache->size - off);

	memcpy(arena + off, src, first);
	if (first < len)
		memcpy(arena, src + first, len - first);
}

/* Empty the way of set that still holds the copy at pos (a stale one). */
static void
forget(uint32 set, uint64 pos)
{
	int			i;

	LWLockAcquire(lock_of(set), LW_EXCLUSIVE);
	for (i = 0; i < CACHE_WAYS; i++)
	{
		CacheWay   *w = &ways[(Size) set * CACHE_WAYS + i];

		if (w->len > 0 && w->pos == pos)
			w->len = 0;
	}
	LWLockRelease(lock_of(set));
}

bool
gateann_record_cache_get(const GateannRecordCacheKey *key, uint32 id,
						 uint32 len, char *dst,
						 GateannRecordCurrentFn current, void *arg)
{
	uint32		set;
	CacheWay	found;
	bool		hit = false;
	uint64		head;
	int			i;

	if (!gateann_record_cache_usable())
		return false;
	pg_atomic_fetch_add_u64(&cache->lookups, 1);
	set = set_of(key, id);
	LWLockAcquire(lock_of(set), LW_SHARED);
	for (i = 0; i < CACHE_WAYS; i++)
	{
		const CacheWay *w = &ways[(Size) set * CACHE_WAYS + i];

		if (way_names(w, key, id) && w->len == len)
		{
			found = *w;
			hit = true;
			break;
		}
	}
	LWLockRelease(lock_of(set));
	if (!hit)
		return false;

	arena_copy_out(found.pos, len, dst);
	pg_read_barrier();
	head = pg_atomic_read_u64(&cache->head);
	if (!intact(found.pos, len, head))
		return false;
	if (!current(arg, dst, found.lsn))
	{
		pg_atomic_fetch_add_u64(&cache->stale, 1);
		forget(set, found.pos);
		return false;
	}
	pg_atomic_fetch_add_u64(&cache->hits, 1);

	/* second chance: in the oldest quarter of the ring, write it again */
	if (head - found.pos > cache->size / 4 * 3)
		gateann_record_cache_put(key, id, dst, len, found.lsn);
	return true;
}

/* ------------------------------------------------------------- storing */

void
gateann_record_cache_put(const GateannRecordCacheKey *key, uint32 id,
						 const char *record, uint32 len, XLogRecPtr lsn)
{
	uint64		room = TYPEALIGN(MAXIMUM_ALIGNOF, (uint64) len);
	uint64		pos;
	uint64		head;
	uint32		set;
	CacheWay   *victim = NULL;
	int			i;

	if (!gateann_record_cache_usable() || len == 0 || room > cache->size / CACHE_MAX_SHARE)
		return;
	pos = pg_atomic_fetch_add_u64(&cache->head, room);
	arena_copy_in(pos, record, len);

	set = set_of(key, id);
	LWLockAcquire(lock_of(set), LW_EXCLUSIVE);
	head = pg_atomic_read_u64(&cache->head);
	for (i = 0; i < CACHE_WAYS; i++)
	{
		CacheWay   *w = &ways[(Size) set * CACHE_WAYS + i];

		if (way_names(w, key, id) || !intact(w->pos, w->len, head))
		{
			victim = w;
			break;
		}
		if (victim == NULL || w->pos < victim->pos)
			victim = w;
	}
	victim->build_id = key->build_id;
	victim->dboid = key->dboid;
	victim->relfilenumber = key->relfilenumber;
	victim->node_id = id;
	victim->len = len;
	victim->pos = pos;
	victim->lsn = lsn;
	LWLockRelease(lock_of(set));
	pg_atomic_fetch_add_u64(&cache->stores, 1);
}

/* ------------------------------------------------------------- reporting */

void
gateann_record_cache_stats(GateannRecordCacheStats *st)
{
	uint64		head;
	uint32		set;

	memset(st, 0, sizeof(*st));
	if (cache == NULL)
		return;
	st->size_bytes = (int64) cache->size;
	st->lookups = (int64) pg_atomic_read_u64(&cache->lookups);
	st->hits = (int64) pg_atomic_read_u64(&cache->hits);
	st->stale = (int64) pg_atomic_read_u64(&cache->stale);
	st->stores = (int64) pg_atomic_read_u64(&cache->stores);
	head = pg_atomic_read_u64(&cache->head);
	for (set = 0; set < cache->nsets; set++)
	{
		int			i;

		if ((set & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		LWLockAcquire(lock_of(set), LW_SHARED);
		for (i = 0; i < CACHE_WAYS; i++)
		{
			const CacheWay *w = &ways[(Size) set * CACHE_WAYS + i];

			if (intact(w->pos, w->len, head))
			{
				st->records++;
				st->record_bytes += w->len;
			}
		}
		LWLockRelease(lock_of(set));
	}
}
