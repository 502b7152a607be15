/*
 * io.h — asynchronous reads of index blocks straight from the relation's
 * segment files.
 *
 * A scan opens one GateannIo, submits reads of node records (nblocks
 * consecutive blocks of the index's main fork each, up to gateann.io_width
 * at a time) and consumes completions as they land, PipeANN-style: submit
 * while fewer than width reads are in flight, take the next completion,
 * process it, submit more.
 *
 * Methods (gateann.io_method):
 *   io_uring  a per-backend io_uring ring, O_DIRECT reads into aligned buffers
 *   pread     synchronous pread(), with O_DIRECT where the filesystem allows
 *   buffer    ReadBufferExtended + memcpy of each page: always correct, and
 *             the reference the other two must agree with
 *   auto      a page shared buffers or the kernel's page cache hold already is
 *             copied from there (no I/O, no wait: a look in the buffer
 *             mapping table, then a read the kernel serves only from its
 *             cache, RWF_NOWAIT); the others are read through the buffer
 *             manager for a cacheable index, else with io_uring, else
 *             pread, else buffer
 * A method that cannot work here degrades the same way, with a NOTICE once
 * per backend saying why.
 *
 * This module only reads files.  Which blocks may be newer in shared buffers
 * than on disk is the caller's business (the file can lag the buffer
 * manager); a read past the end of the file or an I/O error is reported as a
 * failed completion (data == NULL), never as an ERROR, so that the caller
 * can re-read the block through the buffer manager.  Pages read from the
 * file should be checked with gateann_io_pages_valid() for the same reason.
 */
#ifndef GATEANN_IO_H
#define GATEANN_IO_H

#include "postgres.h"

#include "storage/block.h"
#include "utils/relcache.h"

typedef enum GateannIoMethod
{
	GATEANN_IO_AUTO,
	GATEANN_IO_URING,
	GATEANN_IO_PREAD,
	GATEANN_IO_BUFFER
} GateannIoMethod;

/* GUC gateann.io_method (auto | io_uring | pread | buffer) */
extern int	gateann_io_method;

/* GUC gateann.io_width: maximum reads in flight per scan (1 .. 128) */
extern int	gateann_io_width;

#define GATEANN_IO_MAX_WIDTH	128

/* Defines the two GUCs and registers the cleanup callbacks; from _PG_init. */
extern void gateann_io_define_gucs(void);

typedef struct GateannIo GateannIo;

/*
 * Open a reader for `index` whose reads are at most max_blocks consecutive
 * blocks each.  The caller must hold a lock on the index for as long as the
 * reader is open (the relation's files must not be unlinked or truncated
 * under it) and close it in the same resource owner (portal) it was opened
 * in.  The width is gateann.io_width at the time of the call.  With
 * buffer_only, reads go through the buffer manager whatever
 * gateann.io_method says (the caller knows the files may lag it).
 *
 * With cacheable (the caller judged the index small enough for shared
 * buffers to hold), auto reads a page it finds in no memory through the
 * buffer manager, which keeps it there: the index warms up to shared
 * buffers; otherwise such pages are read with O_DIRECT and kept nowhere.
 *
 * The GateannIo does not live in CurrentMemoryContext: if the transaction or
 * portal is aborted before gateann_io_close, the handle and its reads are
 * cleaned up by a resource-owner callback (io.c explains how).
 */
extern GateannIo *gateann_io_open(Relation index, int max_blocks, bool buffer_only,
								  bool cacheable);

/* Closes the reader; reads still in flight are discarded (safely). */
extern void gateann_io_close(GateannIo *io);

/* "io_uring", "pread" or "buffer": the method actually used. */
extern const char *gateann_io_method_name(const GateannIo *io);

/* Reads submitted and not yet returned by gateann_io_next. */
extern int	gateann_io_inflight(const GateannIo *io);

/* The reader's width: submit refuses more than this many reads in flight. */
extern int	gateann_io_width_of(const GateannIo *io);

/*
 * Start reading blocks [blkno, blkno + nblocks) for the caller's tag
 * (1 <= nblocks <= max_blocks).  Returns false, doing nothing, if width
 * reads are already in flight.  With pread and buffer the read happens here,
 * synchronously, and its completion is queued for gateann_io_next.
 */
extern bool gateann_io_submit(GateannIo *io, BlockNumber blkno, int nblocks,
							  uint64 tag);

/*
 * Next completed read, in completion order.  With wait = true, blocks until
 * one lands (and serves query cancel meanwhile); returns false only when
 * nothing is in flight.  With wait = false, returns false if nothing has
 * landed yet.
 *
 * On true, *tag is the submit's tag, *blkno_out (if not NULL) its first
 * block, and *data points at nblocks * BLCKSZ bytes of the blocks as read
 * from the file, or is NULL if the read failed (short read past EOF, I/O
 * error): re-read those blocks through the buffer manager.  *current (if
 * not NULL) says the bytes were copied out of shared buffers, each page
 * under its lock: the current version, whole, with nothing to validate.  The bytes stay
 * valid, and may be modified by the caller, until the next call of
 * gateann_io_next or gateann_io_close on this reader (the buffer does not
 * count towards the width meanwhile, so the caller may submit more reads
 * before it processes them).
 */
extern bool gateann_io_next(GateannIo *io, bool wait, uint64 *tag,
							BlockNumber *blkno_out, char **data, bool *current);

/*
 * Sanity check of nblocks pages read from the file, the first being block
 * blkno: standard page header bounds (pd_lower/pd_upper/pd_special, flags,
 * page size and layout version), not all-new, and the checksum if data
 * checksums are enabled.  False means "re-read through the buffer manager"
 * (torn or stale page, block not yet written).  data must be writable
 * (pg_checksum_page zeroes pd_checksum while it computes, then restores it).
 * Copies out of shared buffers (gateann_io_next's *current) need no check:
 * a page there carries the checksum of its last write, not of what it
 * holds now, and would fail it.
 */
extern bool gateann_io_pages_valid(char *data, BlockNumber blkno, int nblocks);

/*
 * Does the reader look in memory first (io_method = auto)?  A caller that
 * can copy what it needs out of shared buffers itself then may
 * (gateann_read_record_resident) and read only what is not there.
 */
extern bool gateann_io_tiered(const GateannIo *io);

/*
 * Does every read complete at once, from memory or through the buffer
 * manager, by the reader's choice (auto on a cacheable index)?  Then reads
 * in flight gain nothing.  (The buffer method reads so too, but stands in
 * for the others: it keeps their width.)
 */
extern bool gateann_io_synchronous(const GateannIo *io);

/* Counters for gateann_last_scan(). */
extern int64 gateann_io_pages_read(const GateannIo *io);	/* pages read from the file (io_uring, pread) */
extern int64 gateann_io_resident_pages(const GateannIo *io);	/* auto: pages shared buffers held */
extern int64 gateann_io_cached_pages(const GateannIo *io);	/* auto: pages the page cache held */
extern int64 gateann_io_buffer_pages(const GateannIo *io);	/* pages copied through the buffer manager */
extern int64 gateann_io_failed(const GateannIo *io);	/* completions returned with data == NULL */
extern int64 gateann_io_wait_us(const GateannIo *io);	/* time blocked on reads, microseconds */
extern bool gateann_io_direct(const GateannIo *io);	/* file reads bypass the page cache (O_DIRECT) */

#endif							/* GATEANN_IO_H */
