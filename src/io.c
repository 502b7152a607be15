/*
 * io.c — reads of index blocks straight from the relation's segment files:
 * io_uring, pread or (always correct) the buffer manager.  See io.h for the
 * interface and store.h for when a direct read can be trusted.
 *
 * Memory and lifetime design
 * --------------------------
 * The kernel writes into a read's buffer at some point after submission,
 * and an io_uring read cannot be called back.  So a buffer handed to the
 * kernel must stay allocated until its completion has been reaped, even if
 * the scan that asked for it is long gone (query cancel, ERROR, LIMIT
 * reached with reads in flight).  Hence:
 *
 * - Buffers belong to a backend-wide pool of slots in TopMemoryContext,
 *   never to a scan's memory context.  A slot's index is the io_uring
 *   user_data of its read, and a slot is never reused while its read is in
 *   flight, so a completion always finds its slot.
 *
 * - Each slot records its owning reader.  When a reader goes away with
 *   reads in flight — gateann_io_close, or the cleanup callbacks below when
 *   the scan is aborted — those slots are orphaned (owner = NULL) rather
 *   than freed; whoever reaps the ring next (any reader of this backend, or
 *   the next gateann_io_open) returns an orphan's slot to the free list when
 *   its completion arrives.  Aborting never waits for reads; only a new
 *   reader waits, and only while more than GATEANN_MAX_ORPHANS orphaned
 *   reads are still out (scans cancelled faster than the device completes
 *   their reads must not pile up memory and ring depth without bound).
 *
 * - The GateannIo itself lives in TopMemoryContext, on a backend-wide list,
 *   and remembers CurrentResourceOwner at open (the scan's portal).  A
 *   resource-owner release callback releases readers of the owner being
 *   released (CurrentResourceOwner points at it during release), which is
 *   exactly when the scan's buffer pins would go: at abort of the portal,
 *   subtransaction or transaction.  A transaction callback releases whatever
 *   is left at transaction end.  Releasing closes the reader's files (the
 *   kernel keeps its own reference for submitted reads) and orphans its
 *   slots.  At commit a reader still open is a leak: WARNING, like other
 *   resource leaks.
 *
 * - One io_uring ring per backend, created lazily at the first reader that
 *   wants it and kept for the life of the process (the kernel tears it down
 *   at exit).  Backends are forked from the postmaster, which never creates
 *   one; the ring also remembers the pid that made it, so a forked child
 *   would never use its parent's ring.
 *
 * A read is submitted to the kernel at once (one io_uring_submit per read),
 * as PipeANN does: no batching delay between the decision to read a node
 * and the SSD starting on it.
 *
 * Building with -DGATEANN_IO_FAULT_INJECTION makes the environment variables
 * GATEANN_IO_FAIL_URING (io_uring_queue_init fails with EPERM),
 * GATEANN_IO_FAIL_DIRECT (O_DIRECT open fails with EINVAL) and
 * GATEANN_IO_EINVAL_READ (O_DIRECT io_uring reads complete with EINVAL) of
 * the server force the fallbacks, for testing them where everything works.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>
#include <liburing.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/checksum.h"
#include "storage/fd.h"
#include "storage/smgr.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"

#include "compat.h"
#include "io.h"
#include "page.h"

/* Submission queue depth of the per-backend ring (completion queue: twice) */
#define GATEANN_RING_DEPTH		256

/* Kernel pages one page-cache probe asks about: 32 blocks of 8 kB, 4 kB pages */
#define GATEANN_IO_MINCORE_PAGES	64

/* Alignment of read buffers: O_DIRECT needs the logical block size, 4096 covers it */
#define GATEANN_IO_ALIGN		4096

/* How long one blocking wait lasts before we look at interrupts again */
#define GATEANN_WAIT_TIMEOUT_NS	(100 * 1000 * 1000)

int			gateann_io_method = GATEANN_IO_AUTO;
int			gateann_io_width = 16;

static const struct config_enum_entry gateann_io_method_options[] = {
	{"auto", GATEANN_IO_AUTO, false},
	{"io_uring", GATEANN_IO_URING, false},
	{"pread", GATEANN_IO_PREAD, false},
	{"buffer", GATEANN_IO_BUFFER, false},
	{NULL, 0, false}
};

/* Where a read's bytes came from */
#define SOURCE_FILE			0	/* the file: the device (O_DIRECT) or the page cache */
#define SOURCE_BUFFERS		1	/* ReadBuffer: shared buffers, loading what is missing */
#define SOURCE_RESIDENT		2	/* auto: shared buffers held every page already */
#define SOURCE_PAGE_CACHE	3	/* auto: the kernel's page cache held every page */

/* Slot states */
#define SLOT_FREE		0		/* on the free list */
#define SLOT_INFLIGHT	1		/* read submitted to the ring, not reaped */
#define SLOT_DONE		2		/* read finished (or running synchronously) */
#define SLOT_HELD		3		/* returned by gateann_io_next, data in use */

typedef struct GateannIoSlot
{
	char	   *buf;			/* GATEANN_IO_ALIGNed, cap_blocks * BLCKSZ */
	void	   *raw;			/* the allocation behind buf */
	int			cap_blocks;
	int			state;			/* SLOT_* */
	GateannIo  *owner;			/* NULL when free or orphaned */
	bool		direct;			/* read was issued on an O_DIRECT file */
	uint8		source;			/* SOURCE_*: where the bytes came from */
	uint64		tag;
	BlockNumber blkno;
	int			nblocks;
	int			result;			/* bytes read, or -errno */
	int			next;			/* free list or owner's done FIFO; -1 ends */
} GateannIoSlot;

struct GateannIo
{
	dlist_node	node;			/* in live_readers */
	ResourceOwner owner;		/* CurrentResourceOwner at open */
	Relation	index;
	Oid			relid;
	GateannIoMethod method;		/* URING, PREAD or BUFFER */
	bool		direct;			/* open segment files with O_DIRECT */
	bool		tiered;			/* auto: shared buffers, then the page cache,
								 * then the device (probe_sources) */
	bool		nowait;			/* page-cache probes work (mincore, RWF_NOWAIT) */
	bool		load_misses;	/* tiered, cacheable index: a page no memory
								 * holds is read into shared buffers */
	size_t		os_page;		/* the kernel's page size */
	char	   *path;			/* main fork, relative to the data directory */
	int		   *fds;			/* per segment number; -1 = not open */
	int			nfds;
	int		   *cached_fds;		/* the same opened without O_DIRECT, for
								 * page-cache probes; -1 = not open */
	int			ncached_fds;
	char	  **cached_maps;	/* per segment: a mapping of it, for mincore
								 * (never touched); NULL = not mapped */
	int			ncached_maps;
	int			width;
	int			max_blocks;
	int			inflight;		/* submitted, not yet returned by next */
	int			in_ring;		/* of which submitted to the ring, not reaped */
	int			done_head;		/* FIFO of finished slots */
	int			done_tail;
	int			held;			/* slot returned by the last next, or -1 */
	int64		pages_read;
	int64		buffer_pages;
	int64		resident_pages;
	int64		cached_pages;
	int64		failed;
	instr_time	wait_time;
};

/* Backend-wide state */
static GateannIoSlot *pool = NULL;
static int	pool_size = 0;
static int	pool_free = -1;

static dlist_head live_readers = DLIST_STATIC_INIT(live_readers);

static struct io_uring ring;
static pid_t ring_pid = 0;		/* process that created `ring`; 0 = none */
static pid_t ring_tried_pid = 0;	/* process that tried (and maybe failed) */
static int	ring_errno = 0;		/* why creation failed */
static int	ring_inflight = 0;	/* reads in the ring, all readers + orphans */
static int	orphans_inflight = 0;	/* of which orphaned (reader gone) */

/*
 * Orphaned reads a new reader tolerates before it waits for some to land.
 * Without a bound, scans that keep being cancelled (or closed early) faster
 * than the device completes their reads would pile up slots and ring depth.
 */
#define GATEANN_MAX_ORPHANS		GATEANN_IO_MAX_WIDTH

static bool degrade_notice_sent = false;

static void reader_release(GateannIo *io);

/* ---------------------------------------------------------------- slots */

static void
pool_grow(void)
{
	int			newsize = pool_size > 0 ? pool_size * 2 : 32;
	int			i;

	if (pool == NULL)
		pool = MemoryContextAllocZero(TopMemoryContext,
									  newsize * sizeof(GateannIoSlot));
	else
	{
		pool = repalloc(pool, newsize * sizeof(GateannIoSlot));
		memset(pool + pool_size, 0,
			   (newsize - pool_size) * sizeof(GateannIoSlot));
	}
	/* link the new slots into the free list, lowest index first */
	for (i = newsize - 1; i >= pool_size; i--)
	{
		pool[i].state = SLOT_FREE;
		pool[i].next = pool_free;
		pool_free = i;
	}
	pool_size = newsize;
	elog(DEBUG1, "gateann: I/O slot pool grown to %d slots", pool_size);
}

/*
 * Take a free slot for `io`, with room for io->max_blocks blocks.  Any
 * allocation happens before the slot leaves the free list, so an
 * out-of-memory ERROR leaks nothing.
 */
static int
slot_get(GateannIo *io)
{
	int			idx;
	GateannIoSlot *s;

	if (pool_free < 0)
		pool_grow();
	idx = pool_free;
	s = &pool[idx];
	if (s->cap_blocks < io->max_blocks)
	{
		void	   *raw;

		raw = MemoryContextAlloc(TopMemoryContext,
								 (Size) io->max_blocks * BLCKSZ + GATEANN_IO_ALIGN);
		if (s->raw)
			pfree(s->raw);
		s->raw = raw;
		s->buf = (char *) TYPEALIGN(GATEANN_IO_ALIGN, raw);
		s->cap_blocks = io->max_blocks;
	}
	pool_free = s->next;
	s->owner = io;
	s->next = -1;
	s->result = 0;
	s->direct = false;
	return idx;
}

static void
slot_free(int idx)
{
	GateannIoSlot *s = &pool[idx];

	s->state = SLOT_FREE;
	s->owner = NULL;
	s->next = pool_free;
	pool_free = idx;
}

static void
done_push(GateannIo *io, int idx)
{
	pool[idx].state = SLOT_DONE;
	pool[idx].next = -1;
	if (io->done_tail >= 0)
		pool[io->done_tail].next = idx;
	else
		io->done_head = idx;
	io->done_tail = idx;
}

/* ----------------------------------------------------------------- ring */

/*
 * The backend's ring, created on first use.  A failure is remembered for
 * the life of the process (seccomp, io_uring_disabled, ENOSYS will not go
 * away), so we try once.
 */
static bool
ring_available(void)
{
	int			rc;

	if (ring_pid == MyProcPid)
		return true;
	if (ring_tried_pid == MyProcPid)
		return false;

	/* anything inherited from another process is not ours to touch */
	ring_pid = 0;
	ring_inflight = 0;
	orphans_inflight = 0;
	ring_tried_pid = MyProcPid;

#ifdef GATEANN_IO_FAULT_INJECTION
	if (getenv("GATEANN_IO_FAIL_URING") != NULL)
		rc = -EPERM;
	else
#endif
		rc = io_uring_queue_init(GATEANN_RING_DEPTH, &ring, 0);
	if (rc < 0)
	{
		ring_errno = -rc;
		return false;
	}
	ring_pid = MyProcPid;
	return true;
}

/* Hand a finished ring read to its reader, or free it if orphaned. */
static void
complete_slot(int idx, int res)
{
	GateannIoSlot *s;

	if (idx < 0 || idx >= pool_size || pool[idx].state != SLOT_INFLIGHT)
	{
		/* cannot happen; never let a stray completion touch a slot */
		elog(LOG, "gateann: ignoring unexpected io_uring completion %d", idx);
		return;
	}
	ring_inflight--;
	s = &pool[idx];
	if (s->owner == NULL)
	{
		orphans_inflight--;
		slot_free(idx);
		return;
	}
#ifdef GATEANN_IO_FAULT_INJECTION
	if (s->direct && getenv("GATEANN_IO_EINVAL_READ") != NULL)
		res = -EINVAL;
#endif
	s->result = res;
	s->owner->in_ring--;
	done_push(s->owner, idx);
}

/* Reap every completion that has arrived, without blocking. */
static void
reap_completions(void)
{
	struct io_uring_cqe *cqe;

	if (ring_pid != MyProcPid || ring_inflight == 0)
		return;
	while (io_uring_peek_cqe(&ring, &cqe) == 0)
	{
		int			idx = (int) (uintptr_t) io_uring_cqe_get_data(cqe);
		int			res = cqe->res;

		io_uring_cqe_seen(&ring, cqe);
		complete_slot(idx, res);
	}
}

/*
 * Push queued SQEs to the kernel.  EBUSY/EAGAIN mean the completion side is
 * backed up: reap and retry.  Anything else is an environment failure (not
 * a read error), reported as ERROR; the slot stays in flight and is reaped
 * as an orphan later, so that is safe.
 */
static void
ring_submit(void)
{
	int			attempts = 0;

	while (io_uring_sq_ready(&ring) > 0)
	{
		int			rc = io_uring_submit(&ring);

		if (rc > 0 || rc == -EINTR)
			continue;
		if ((rc == 0 || rc == -EAGAIN || rc == -EBUSY) && ++attempts < 1000)
		{
			reap_completions();
			pg_usleep(100L);
			continue;
		}
		if (rc == 0)
			ereport(ERROR,
					(errcode(ERRCODE_IO_ERROR),
					 errmsg("gateann: io_uring_submit made no progress after %d attempts", attempts),
					 errhint("SET gateann.io_method = 'pread' reads without io_uring.")));
		errno = -rc;
		ereport(ERROR,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("gateann: io_uring_submit failed: %m"),
				 errhint("SET gateann.io_method = 'pread' reads without io_uring.")));
	}
}

/*
 * Block until at least one completion (anyone's) is in the ring, or timeout;
 * the time is added to *wait_time.
 */
static void
ring_wait(instr_time *wait_time)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts;
	instr_time	start,
				end;
	int			rc;

	ts.tv_sec = 0;
	ts.tv_nsec = GATEANN_WAIT_TIMEOUT_NS;
	INSTR_TIME_SET_CURRENT(start);
	rc = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_ACCUM_DIFF(*wait_time, end, start);
	if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN)
	{
		errno = -rc;
		ereport(ERROR,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("gateann: waiting for io_uring completions failed: %m"),
				 errhint("SET gateann.io_method = 'pread' reads without io_uring.")));
	}
}

/* ---------------------------------------------------------------- files */

/* Close all open segment files of the reader. */
static void
close_segments(GateannIo *io)
{
	int			i;

	for (i = 0; i < io->nfds; i++)
	{
		if (io->fds[i] >= 0)
		{
			close(io->fds[i]);
			ReleaseExternalFD();
			io->fds[i] = -1;
		}
	}
	for (i = 0; i < io->ncached_fds; i++)
	{
		if (io->cached_fds[i] >= 0)
		{
			close(io->cached_fds[i]);
			ReleaseExternalFD();
			io->cached_fds[i] = -1;
		}
	}
	for (i = 0; i < io->ncached_maps; i++)
	{
		if (io->cached_maps[i] != NULL)
		{
			munmap(io->cached_maps[i], (size_t) RELSEG_SIZE * BLCKSZ);
			io->cached_maps[i] = NULL;
		}
	}
}

/* Make room in a per-segment descriptor array for segment segno */
static void
fd_array_reserve(int **fds, int *nfds, BlockNumber segno)
{
	int			newn,
				i;

	if (segno < (BlockNumber) *nfds)
		return;
	newn = Max(*nfds * 2, (int) segno + 1);
	if (*fds == NULL)
		*fds = MemoryContextAlloc(TopMemoryContext, newn * sizeof(int));
	else
		*fds = repalloc(*fds, newn * sizeof(int));
	for (i = *nfds; i < newn; i++)
		(*fds)[i] = -1;
	*nfds = newn;
}

/*
 * Segment segno opened without O_DIRECT, for reads that may only be served
 * by the page cache; -1 if it cannot be opened (the probe is skipped).
 */
static int
cached_segment(GateannIo *io, BlockNumber segno)
{
	char	   *path;
	int			fd;

	fd_array_reserve(&io->cached_fds, &io->ncached_fds, segno);
	if (io->cached_fds[segno] >= 0)
		return io->cached_fds[segno];
	path = segno == 0 ? io->path : psprintf("%s.%u", io->path, segno);
	ReserveExternalFD();
	fd = BasicOpenFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
		ReleaseExternalFD();
	else
		io->cached_fds[segno] = fd;
	if (path != io->path)
		pfree(path);
	return fd;
}

/*
 * File descriptor of segment `segno`, opened on first use (with O_DIRECT
 * while io->direct).  Returns -1 with *err set on failure; never ERRORs
 * except out of memory.
 */
static int
open_segment(GateannIo *io, BlockNumber segno, int *err)
{
	char	   *path;
	int			fd = -1;

	fd_array_reserve(&io->fds, &io->nfds, segno);
	if (io->fds[segno] >= 0)
		return io->fds[segno];

	if (segno == 0)
		path = io->path;
	else
		path = psprintf("%s.%u", io->path, segno);

	/* count the descriptor against max_files_per_process like fd.c wants */
	ReserveExternalFD();
#ifdef O_DIRECT
	if (io->direct)
	{
#ifdef GATEANN_IO_FAULT_INJECTION
		if (getenv("GATEANN_IO_FAIL_DIRECT") != NULL)
		{
			fd = -1;
			errno = EINVAL;
		}
		else
#endif
			fd = BasicOpenFile(path, O_RDONLY | PG_BINARY | O_DIRECT);
		/* EINVAL: the file system does not do O_DIRECT (tmpfs before 6.6) */
		if (fd < 0 && errno == EINVAL)
			io->direct = false;
	}
#else
	io->direct = false;
#endif
	if (!io->direct)
		fd = BasicOpenFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		*err = errno;
		ReleaseExternalFD();
	}
	else
		io->fds[segno] = fd;
	if (path != io->path)
		pfree(path);
	return fd;
}

/* pread() all of len bytes, retrying EINTR and partial reads; bytes or -errno */
static ssize_t
pread_full(int fd, char *buf, size_t len, off_t offset)
{
	size_t		done = 0;

	while (done < len)
	{
		ssize_t		n = pread(fd, buf + done, len - done, offset + done);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;				/* end of file */
		done += n;
	}
	return done;
}

/*
 * Read blocks [blkno, blkno + nblocks) synchronously with pread, piece by
 * piece across segment boundaries.  Returns bytes read (short at end of
 * file) or -errno.  An EINVAL on an O_DIRECT file (a file system that opens
 * but rejects direct reads) turns O_DIRECT off for the reader and retries.
 */
static int
pread_blocks(GateannIo *io, char *buf, BlockNumber blkno, int nblocks)
{
	int			done = 0;

	while (done < nblocks)
	{
		BlockNumber b = blkno + done;
		BlockNumber segno = b / ((BlockNumber) RELSEG_SIZE);
		int			n = Min(nblocks - done,
							(int) (RELSEG_SIZE - b % ((BlockNumber) RELSEG_SIZE)));
		off_t		off = (off_t) (b % ((BlockNumber) RELSEG_SIZE)) * BLCKSZ;
		int			err = 0;
		int			fd = open_segment(io, segno, &err);
		ssize_t		got;

		if (fd < 0)
			return -err;
		got = pread_full(fd, buf + (Size) done * BLCKSZ, (size_t) n * BLCKSZ, off);
		if (got == -EINVAL && io->direct)
		{
			io->direct = false;
			close_segments(io);
			continue;
		}
		if (got < 0)
			return (int) got;
		if (got < (ssize_t) n * BLCKSZ)
			return done * BLCKSZ + (int) got;
		done += n;
	}
	return nblocks * BLCKSZ;
}

/* pread_blocks into a slot, timed as I/O wait */
static void
slot_pread(GateannIo *io, int idx)
{
	GateannIoSlot *s = &pool[idx];
	instr_time	start,
				end;

	INSTR_TIME_SET_CURRENT(start);
	s->result = pread_blocks(io, s->buf, s->blkno, s->nblocks);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_ACCUM_DIFF(io->wait_time, end, start);
}

/* Copy blocks through the buffer manager; ERRORs like any buffer read. */
static void
slot_read_buffers(GateannIo *io, int idx)
{
	GateannIoSlot *s = &pool[idx];
	instr_time	start,
				end;
	int			i;

	INSTR_TIME_SET_CURRENT(start);
	for (i = 0; i < s->nblocks; i++)
	{
		Buffer		buf = ReadBufferExtended(io->index, MAIN_FORKNUM,
											 s->blkno + i, RBM_NORMAL, NULL);

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		memcpy(s->buf + (Size) i * BLCKSZ, BufferGetPage(buf), BLCKSZ);
		UnlockReleaseBuffer(buf);
	}
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_ACCUM_DIFF(io->wait_time, end, start);
	s->result = s->nblocks * BLCKSZ;
}

/* ------------------------------------------------------ cheapest source */

/*
 * Copy the slot's blocks out of shared buffers if every one of them is
 * there now, without loading any: a look in the buffer mapping table, then
 * a pin that holds only if the buffer still holds the block.  False (and
 * nothing kept) as soon as one is not.
 */
static bool
read_resident(GateannIo *io, GateannIoSlot *s)
{
	int			i;

	for (i = 0; i < s->nblocks; i++)
	{
		Buffer		buf = gateann_pin_resident(io->index, s->blkno + i, NULL);

		if (!BufferIsValid(buf))
			return false;
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		memcpy(s->buf + (Size) i * BLCKSZ, BufferGetPage(buf), BLCKSZ);
		UnlockReleaseBuffer(buf);
	}
	return true;
}

/*
 * A mapping of segment segno (never read through: mincore asks the kernel
 * which of its pages the page cache holds), or NULL; a failure turns the
 * probes off for this reader.
 */
static char *
cached_map(GateannIo *io, BlockNumber segno, int fd)
{
	int			i;
	void	   *map;

	if (segno >= (BlockNumber) io->ncached_maps)
	{
		int			newn = Max(io->ncached_maps * 2, (int) segno + 1);

		io->cached_maps = io->cached_maps == NULL ?
			MemoryContextAlloc(TopMemoryContext, newn * sizeof(char *)) :
			repalloc(io->cached_maps, newn * sizeof(char *));
		for (i = io->ncached_maps; i < newn; i++)
			io->cached_maps[i] = NULL;
		io->ncached_maps = newn;
	}
	if (io->cached_maps[segno] != NULL)
		return io->cached_maps[segno];
	map = mmap(NULL, (size_t) RELSEG_SIZE * BLCKSZ, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
	{
		io->nowait = false;
		return NULL;
	}
	io->cached_maps[segno] = map;
	return map;
}

/*
 * Read the slot's blocks if the kernel's page cache holds them all.  Asking
 * first (mincore on a mapping of the file) has no side effect; a read that
 * merely may not wait (RWF_NOWAIT) would start reading a missing page into
 * the cache, which the device read that follows would read again.  The read
 * itself still may not wait: a page evicted since the question is left to
 * the device.  False if a page is not there (or the kernel cannot say:
 * then never again for this reader).
 */
static bool
read_page_cache(GateannIo *io, GateannIoSlot *s)
{
#ifdef RWF_NOWAIT
	BlockNumber segno = s->blkno / RELSEG_SIZE;
	size_t		len = (size_t) s->nblocks * BLCKSZ;
	off_t		off = (off_t) (s->blkno % RELSEG_SIZE) * BLCKSZ;
	unsigned char resident[GATEANN_IO_MINCORE_PAGES];
	size_t		npages;
	size_t		i;
	int			fd;
	char	   *map;
	struct iovec iov;
	ssize_t		got;

	if (segno != (s->blkno + s->nblocks - 1) / RELSEG_SIZE ||
		(fd = cached_segment(io, segno)) < 0 || (map = cached_map(io, segno, fd)) == NULL)
		return false;
	npages = (len + io->os_page - 1) / io->os_page;
	if (npages > lengthof(resident))
		return false;			/* (records that long are read from the device) */
	if (mincore(map + off, len, resident) != 0)
	{
		io->nowait = false;
		return false;
	}
	for (i = 0; i < npages; i++)
		if (!(resident[i] & 1))
			return false;
	iov.iov_base = s->buf;
	iov.iov_len = len;
	got = preadv2(fd, &iov, 1, off, RWF_NOWAIT);
	return got == (ssize_t) len;
#else
	io->nowait = false;
	return false;
#endif
}

/*
 * gateann.io_method = auto: serve a read from memory when memory holds it,
 * shared buffers first, then the page cache; true if one did (the slot is
 * done, its source set).  Otherwise the caller reads the device.  A page
 * from either may lag what a writer holds in shared buffers exactly as the
 * file does, and is checked the same way (store.h, marks).
 */
static bool
probe_sources(GateannIo *io, GateannIoSlot *s)
{
	if (read_resident(io, s))
		s->source = SOURCE_RESIDENT;
	else if (io->nowait && !io->load_misses && read_page_cache(io, s))
		s->source = SOURCE_PAGE_CACHE;	/* (a cacheable index loads it instead) */
	else
		return false;
	s->result = s->nblocks * BLCKSZ;
	return true;
}

/* ------------------------------------------------------------ interface */

static const char *
method_name(GateannIoMethod m)
{
	switch (m)
	{
		case GATEANN_IO_URING:
			return "io_uring";
		case GATEANN_IO_PREAD:
			return "pread";
		case GATEANN_IO_BUFFER:
			return "buffer";
		case GATEANN_IO_AUTO:
			break;
	}
	return "auto";
}

/* NOTICE, once per backend, that reads use `used` instead of `wanted`. */
static void
degrade_notice(GateannIoMethod wanted, GateannIoMethod used, const char *why)
{
	if (degrade_notice_sent)
		return;
	degrade_notice_sent = true;

	/*
	 * A NOTICE when the user asked for this method; with "auto" the
	 * fallback is the expected behaviour on such a system, and a NOTICE in
	 * every new session would only be noise: the server log records it.
	 */
	ereport(gateann_io_method == GATEANN_IO_AUTO ? LOG : NOTICE,
			(errmsg("gateann: cannot use %s reads: %s",
					method_name(wanted), why),
			 errdetail("Index scans read with \"%s\" instead (same results); this is reported once per session.",
					   method_name(used))));
}

GateannIo *
gateann_io_open(Relation index, int max_blocks, bool buffer_only, bool cacheable)
{
	GateannIo  *io;
	GateannIoMethod wanted = (GateannIoMethod) gateann_io_method;
	char	   *why = NULL;

	if (max_blocks < 1)
		elog(ERROR, "gateann_io_open: max_blocks must be positive");

	/*
	 * Free the slots of earlier scans' reads that have landed meanwhile, and
	 * wait for some if too many are still out.
	 */
	reap_completions();
	while (orphans_inflight > GATEANN_MAX_ORPHANS)
	{
		instr_time	ignored;

		INSTR_TIME_SET_ZERO(ignored);
		ring_wait(&ignored);
		reap_completions();
		CHECK_FOR_INTERRUPTS();
	}

	io = MemoryContextAllocZero(TopMemoryContext, sizeof(GateannIo));
	io->owner = CurrentResourceOwner;
	io->index = index;
	io->relid = RelationGetRelid(index);
	io->width = gateann_io_width;
	io->max_blocks = max_blocks;
	io->done_head = io->done_tail = -1;
	io->held = -1;
	INSTR_TIME_SET_ZERO(io->wait_time);
	/* on the list first: an ERROR below leaves it to the cleanup callbacks */
	dlist_push_tail(&live_readers, &io->node);

	if (wanted == GATEANN_IO_AUTO)
		wanted = GATEANN_IO_URING;
	if (buffer_only)
		wanted = GATEANN_IO_BUFFER;

	if (wanted == GATEANN_IO_BUFFER)
		io->method = GATEANN_IO_BUFFER;
	else if (RelationGetSmgr(index)->smgr_which != 0)
	{
		/* only md.c's files have the layout we compute paths for */
		io->method = GATEANN_IO_BUFFER;
		why = pstrdup("the index is not stored by the md storage manager");
	}
	else
	{
		char	   *path = gateann_relpath_main(index);
		int			err = 0;

		io->path = MemoryContextStrdup(TopMemoryContext, path);
		pfree(path);
		io->direct = true;
		if (open_segment(io, 0, &err) < 0)
		{
			io->method = GATEANN_IO_BUFFER;
			errno = err;
			why = psprintf("could not open file \"%s\": %m", io->path);
		}
		else if (wanted == GATEANN_IO_PREAD)
			io->method = GATEANN_IO_PREAD;
		else if (!io->direct)
		{
			/* page-cache reads gain nothing from a ring */
			io->method = GATEANN_IO_PREAD;
			why = pstrdup("the file system does not support O_DIRECT");
		}
		else if (!ring_available())
		{
			io->method = GATEANN_IO_PREAD;
			errno = ring_errno;
			why = psprintf("io_uring_queue_init failed: %m");
		}
		else
			io->method = GATEANN_IO_URING;
	}
	/* auto: memory first (probe_sources); local buffers are this backend's own */
	io->tiered = gateann_io_method == GATEANN_IO_AUTO && io->method != GATEANN_IO_BUFFER &&
		!RelationUsesLocalBuffers(index);
	io->nowait = io->tiered;
	io->load_misses = io->tiered && cacheable;
	io->os_page = (size_t) sysconf(_SC_PAGESIZE);
	if (io->os_page == 0 || io->os_page > BLCKSZ || BLCKSZ % io->os_page != 0)
		io->nowait = false;		/* (a block would not start on a page) */
	if (why != NULL)
	{
		degrade_notice(wanted, io->method, why);
		pfree(why);
	}
	return io;
}

/*
 * Detach a reader from everything: orphan its slots in the ring (freed when
 * they complete), free the others, close its files, free it.  Called from
 * gateann_io_close and from the cleanup callbacks, so it must not ERROR.
 */
static void
reader_release(GateannIo *io)
{
	int			i;

	for (i = 0; i < pool_size; i++)
	{
		if (pool[i].owner != io)
			continue;
		if (pool[i].state == SLOT_INFLIGHT)
		{
			pool[i].owner = NULL;
			orphans_inflight++;
		}
		else
			slot_free(i);
	}
	close_segments(io);
	dlist_delete(&io->node);
	if (io->fds)
		pfree(io->fds);
	if (io->path)
		pfree(io->path);
	pfree(io);
}

void
gateann_io_close(GateannIo *io)
{
	if (io == NULL)
		return;
	reader_release(io);
	reap_completions();
}

const char *
gateann_io_method_name(const GateannIo *io)
{
	return method_name(io->method);
}

bool
gateann_io_direct(const GateannIo *io)
{
	return io->method != GATEANN_IO_BUFFER && io->direct;
}

int
gateann_io_inflight(const GateannIo *io)
{
	return io->inflight;
}

int
gateann_io_width_of(const GateannIo *io)
{
	return io->width;
}

bool
gateann_io_submit(GateannIo *io, BlockNumber blkno, int nblocks, uint64 tag)
{
	int			idx;
	GateannIoSlot *s;

	if (io->inflight >= io->width)
		return false;
	if (nblocks < 1 || nblocks > io->max_blocks)
		elog(ERROR, "gateann: read of %d blocks exceeds the reader's maximum of %d",
			 nblocks, io->max_blocks);

	idx = slot_get(io);
	s = &pool[idx];
	s->tag = tag;
	s->blkno = blkno;
	s->nblocks = nblocks;
	/* until it is queued, an ERROR in a synchronous read frees it */
	s->state = SLOT_DONE;
	s->source = io->method == GATEANN_IO_BUFFER ? SOURCE_BUFFERS : SOURCE_FILE;
	io->inflight++;

	if (io->method == GATEANN_IO_BUFFER)
	{
		slot_read_buffers(io, idx);
		done_push(io, idx);
	}
	else if (io->tiered && probe_sources(io, s))
		done_push(io, idx);
	else if (io->load_misses)
	{
		/* the page cache, or the device: into shared buffers */
		s->source = SOURCE_BUFFERS;
		slot_read_buffers(io, idx);
		done_push(io, idx);
	}
	else if (io->method == GATEANN_IO_PREAD ||
			 blkno / RELSEG_SIZE != (blkno + nblocks - 1) / RELSEG_SIZE)
	{
		/* the index never places a record across segments; still correct */
		slot_pread(io, idx);
		done_push(io, idx);
	}
	else
	{
		BlockNumber segno = blkno / RELSEG_SIZE;
		int			err = 0;
		int			fd = open_segment(io, segno, &err);
		struct io_uring_sqe *sqe = NULL;

		if (fd >= 0)
		{
			sqe = io_uring_get_sqe(&ring);
			if (sqe == NULL)
			{
				/* SQ ring full of unsubmitted entries; cannot happen as we submit at once */
				ring_submit();
				sqe = io_uring_get_sqe(&ring);
			}
		}
		if (fd < 0)
		{
			s->result = -err;
			done_push(io, idx);
		}
		else if (sqe == NULL)
		{
			slot_pread(io, idx);
			done_push(io, idx);
		}
		else
		{
			io_uring_prep_read(sqe, fd, s->buf, (unsigned) nblocks * BLCKSZ,
							   (uint64) (blkno % RELSEG_SIZE) * BLCKSZ);
			io_uring_sqe_set_data(sqe, (void *) (uintptr_t) idx);
			s->direct = io->direct;
			s->state = SLOT_INFLIGHT;
			io->in_ring++;
			ring_inflight++;
			ring_submit();
		}
	}
	return true;
}

bool
gateann_io_next(GateannIo *io, bool wait, uint64 *tag,
				BlockNumber *blkno_out, char **data, bool *current)
{
	GateannIoSlot *s;
	int			idx;

	if (io->held >= 0)
	{
		slot_free(io->held);
		io->held = -1;
	}

	while (io->done_head < 0)
	{
		if (io->inflight == 0)
			return false;
		Assert(io->in_ring > 0);
		reap_completions();
		if (io->done_head >= 0)
			break;
		if (!wait)
			return false;
		ring_wait(&io->wait_time);
		CHECK_FOR_INTERRUPTS();
	}

	idx = io->done_head;
	s = &pool[idx];
	io->done_head = s->next;
	if (io->done_head < 0)
		io->done_tail = -1;
	s->state = SLOT_HELD;
	s->next = -1;
	io->held = idx;
	io->inflight--;

	/*
	 * A file system may accept O_DIRECT at open and reject the reads (EINVAL,
	 * e.g. misaligned logical block size): read it again without O_DIRECT,
	 * and keep doing so for this reader.
	 */
	if (s->result == -EINVAL && s->direct)
	{
		if (io->direct)
		{
			io->direct = false;
			close_segments(io);
			if (io->method == GATEANN_IO_URING)
			{
				io->method = GATEANN_IO_PREAD;
				degrade_notice(GATEANN_IO_URING, GATEANN_IO_PREAD,
							   "O_DIRECT reads fail with EINVAL on this file system");
			}
		}
		slot_pread(io, idx);
	}

	*tag = s->tag;
	if (blkno_out)
		*blkno_out = s->blkno;
	if (current)
		*current = s->source == SOURCE_BUFFERS || s->source == SOURCE_RESIDENT;
	if (s->result == s->nblocks * BLCKSZ)
	{
		*data = s->buf;
		switch (s->source)
		{
			case SOURCE_BUFFERS:
				io->buffer_pages += s->nblocks;
				break;
			case SOURCE_RESIDENT:
				io->resident_pages += s->nblocks;
				break;
			case SOURCE_PAGE_CACHE:
				io->cached_pages += s->nblocks;
				break;
			default:
				io->pages_read += s->nblocks;
				break;
		}
	}
	else
	{
		*data = NULL;
		io->failed++;
	}
	return true;
}

bool
gateann_io_pages_valid(char *data, BlockNumber blkno, int nblocks)
{
	bool		checksums = DataChecksumsEnabled();
	int			i;

	for (i = 0; i < nblocks; i++)
	{
		char	   *page = data + (Size) i * BLCKSZ;
		PageHeader	ph = (PageHeader) page;

		/* a new (zeroed) page in the file: the buffer manager knows better */
		if (PageIsNew((Page) page))
			return false;
		if (PageGetPageSize((Page) page) != BLCKSZ ||
			PageGetPageLayoutVersion((Page) page) != PG_PAGE_LAYOUT_VERSION ||
			(ph->pd_flags & ~PD_VALID_FLAG_BITS) != 0 ||
			ph->pd_lower < SizeOfPageHeaderData ||
			ph->pd_lower > ph->pd_upper ||
			ph->pd_upper > ph->pd_special ||
			ph->pd_special > BLCKSZ ||
			ph->pd_special != MAXALIGN(ph->pd_special))
			return false;
		if (checksums && pg_checksum_page(page, blkno + i) != ph->pd_checksum)
			return false;
	}
	return true;
}

int64
gateann_io_pages_read(const GateannIo *io)
{
	return io->pages_read;
}

bool
gateann_io_tiered(const GateannIo *io)
{
	return io->tiered;
}

bool
gateann_io_synchronous(const GateannIo *io)
{
	return io->load_misses;
}

int64
gateann_io_resident_pages(const GateannIo *io)
{
	return io->resident_pages;
}

int64
gateann_io_cached_pages(const GateannIo *io)
{
	return io->cached_pages;
}

int64
gateann_io_buffer_pages(const GateannIo *io)
{
	return io->buffer_pages;
}

int64
gateann_io_failed(const GateannIo *io)
{
	return io->failed;
}

int64
gateann_io_wait_us(const GateannIo *io)
{
	return (int64) INSTR_TIME_GET_MICROSEC(io->wait_time);
}

/* ------------------------------------------------------------- cleanup */

/*
 * Resource-owner release: readers opened under the owner being released
 * (ResourceOwnerRelease makes it CurrentResourceOwner while it runs the
 * callbacks) belong to a portal, subtransaction or transaction that is
 * going away; their scans will never call gateann_io_close.
 */
static void
io_resowner_release(ResourceReleasePhase phase, bool isCommit,
					bool isTopLevel, void *arg)
{
	dlist_mutable_iter iter;

	if (phase != RESOURCE_RELEASE_BEFORE_LOCKS)
		return;
	dlist_foreach_modify(iter, &live_readers)
	{
		GateannIo  *io = dlist_container(GateannIo, node, iter.cur);

		if (io->owner != CurrentResourceOwner)
			continue;
		if (isCommit)
			elog(WARNING, "gateann: I/O reader of index %u was not closed",
				 io->relid);
		else
			elog(DEBUG1, "gateann: releasing I/O reader of index %u at abort (%d reads in flight)",
				 io->relid, io->in_ring);
		reader_release(io);
	}
	reap_completions();
}

/* Transaction end: nothing may survive it (holdable cursors are materialized). */
static void
io_xact_callback(XactEvent event, void *arg)
{
	dlist_mutable_iter iter;
	bool		commit;

	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			commit = true;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			commit = false;
			break;
		default:
			return;
	}
	dlist_foreach_modify(iter, &live_readers)
	{
		GateannIo  *io = dlist_container(GateannIo, node, iter.cur);

		if (commit)
			elog(WARNING, "gateann: I/O reader of index %u was not closed",
				 io->relid);
		else
			elog(DEBUG1, "gateann: releasing I/O reader of index %u at transaction abort",
				 io->relid);
		reader_release(io);
	}
	reap_completions();
}

void
gateann_io_define_gucs(void)
{
	DefineCustomEnumVariable("gateann.io_method",
							 "How gateann scans read index pages.",
							 "auto tries io_uring with O_DIRECT, then pread, then the buffer manager (buffer).",
							 &gateann_io_method,
							 GATEANN_IO_AUTO, gateann_io_method_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gateann.io_width",
							"Maximum index page reads a gateann scan keeps in flight.",
							NULL,
							&gateann_io_width,
							16, 1, GATEANN_IO_MAX_WIDTH,
							PGC_USERSET, 0, NULL, NULL, NULL);

	RegisterResourceReleaseCallback(io_resowner_release, NULL);
	RegisterXactCallback(io_xact_callback, NULL);
}
