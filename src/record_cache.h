/*
 * record_cache.h — node records in a server-wide shared-memory budget
 * (record_cache.c).
 *
 * Scans that read records from the index's files keep copies of them here,
 * so that the next scan that needs a hot record (near the entry points, a
 * popular neighbourhood) takes it from memory instead of the device.  The
 * cache holds records, not pages: a page of an index larger than shared
 * buffers holds several records of which a search needs one.
 *
 * A copy is taken only from a read the scan validated (record_from_pages)
 * and comes back with the oldest LSN of the pages it was copied from; the
 * caller treats it exactly as a read of the file: current only if that LSN
 * reaches the block marks of the record's pages (store.h), and usable only
 * if its node id and check match.  Writers need not know the cache exists.
 *
 * Keys name the index's file and build (a rebuild, a retraining, TRUNCATE
 * or DROP give new keys; old copies age out).  The cache needs
 * shared_preload_libraries; without it (or with gateann.record_cache_size
 * = 0) every call finds nothing.
 */
#ifndef GATEANN_RECORD_CACHE_H
#define GATEANN_RECORD_CACHE_H

#include "postgres.h"

#include "access/xlogdefs.h"

typedef struct GateannRecordCacheKey
{
	uint64		build_id;
	Oid			dboid;
	uint32		relfilenumber;
} GateannRecordCacheKey;

/* GUCs gateann.record_cache_size (postmaster) and gateann.record_cache */
extern void gateann_record_cache_define_gucs(void);

/* From the shared memory hooks (shmem.c), under shared_preload_libraries */
extern void gateann_record_cache_shmem_request(void);
extern void gateann_record_cache_shmem_startup(void);

/* Is there a cache, and may this session's scans use it? */
extern bool gateann_record_cache_usable(void);

/*
 * Copy node id's record (len bytes) into dst if the cache holds it, and ask
 * current(arg, dst, lsn) whether the copy may be used (lsn: the oldest LSN
 * of the pages it came from).  A copy it refuses is dropped (counted as
 * stale).  A usable copy about to be overwritten is written again at the
 * head (second chance): the records scans keep using stay.
 */
typedef bool (*GateannRecordCurrentFn) (void *arg, const char *record, XLogRecPtr lsn);

extern bool gateann_record_cache_get(const GateannRecordCacheKey *key, uint32 id,
									 uint32 len, char *dst,
									 GateannRecordCurrentFn current, void *arg);

/* Keep a validated copy of node id's record, read from pages of LSN >= lsn. */
extern void gateann_record_cache_put(const GateannRecordCacheKey *key, uint32 id,
									 const char *record, uint32 len, XLogRecPtr lsn);

/* For gateann_record_cache_info(): size, live copies and their bytes, counters */
typedef struct GateannRecordCacheStats
{
	int64		size_bytes;
	int64		records;
	int64		record_bytes;
	int64		lookups;
	int64		hits;
	int64		stale;
	int64		stores;
} GateannRecordCacheStats;

extern void gateann_record_cache_stats(GateannRecordCacheStats *st);

#endif							/* GATEANN_RECORD_CACHE_H */
