/*
 * page.c — page initialisation, record addressing and record access.
 */
#include "postgres.h"

#include "compat.h"
#include "filter.h"
#include "page.h"
#include "pq.h"
#include "port/pg_crc32c.h"

#include <float.h>
#include <math.h>

#include "access/xloginsert.h"
#include "miscadmin.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

void
gateann_init_page(Page page, uint16 kind)
{
	GateannPageOpaque opaque;

	PageInit(page, BLCKSZ, sizeof(GateannPageOpaqueData));
	opaque = GateannPageGetOpaque(page);
	opaque->magic = GATEANN_MAGIC;
	opaque->kind = kind;
	opaque->unused = 0;
}

Buffer
gateann_new_buffer(Relation index, ForkNumber fork)
{
#ifdef GATEANN_HAVE_EXTEND_BUFFERED_REL
	return ExtendBufferedRel(BMR_REL(index), fork, NULL, EB_LOCK_FIRST);
#else
	Buffer		buf;

	/* PG 15's P_NEW needs the extension lock against concurrent extenders */
	LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBufferExtended(index, fork, P_NEW, RBM_NORMAL, NULL);
	UnlockRelationForExtension(index, ExclusiveLock);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	return buf;
#endif
}

void
gateann_write_page(Relation index, ForkNumber fork, BlockNumber blkno, Page image, bool wal)
{
	Buffer		buf;

	if (blkno == RelationGetNumberOfBlocksInFork(index, fork))
	{
		buf = gateann_new_buffer(index, fork);
		if (BufferGetBlockNumber(buf) != blkno)
			elog(ERROR, "gateann: extended index \"%s\" to block %u, expected %u",
				 RelationGetRelationName(index), BufferGetBlockNumber(buf), blkno);
	}
	else
	{
		buf = ReadBufferExtended(index, fork, blkno, RBM_NORMAL, NULL);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	}
	START_CRIT_SECTION();
	memcpy(BufferGetPage(buf), image, BLCKSZ);
	MarkBufferDirty(buf);
	if (wal && RelationNeedsWAL(index))
		log_newpage_buffer(buf, true);
	END_CRIT_SECTION();
	UnlockReleaseBuffer(buf);
}

BlockNumber
gateann_write_chunked(Relation index, ForkNumber fork, uint16 kind, const char *data,
					  Size total, BlockNumber blkno, bool wal)
{
	PGAlignedBlock page;
	Size		done = 0;

	while (done < total)
	{
		Size		chunk = Min(total - done, (Size) GATEANN_PAGE_CAPACITY);

		gateann_init_page(page.data, kind);
		memcpy(PageGetContents(page.data), data + done, chunk);
		gateann_page_set_used(page.data, chunk);
		gateann_write_page(index, fork, blkno++, page.data, wal);
		done += chunk;
	}
	return blkno;
}

void
gateann_node_writer_start(GateannNodeWriter *w, Relation index, ForkNumber fork,
						  const GateannMetaPageData *meta, BlockNumber blkno, bool wal)
{
	w->index = index;
	w->fork = fork;
	w->meta = meta;
	w->wal = wal;
	w->blkno = blkno;
	w->slot = 0;
}

void
gateann_node_writer_add(GateannNodeWriter *w, const char *rec)
{
	const GateannMetaPageData *meta = w->meta;

	if (meta->records_per_page == 0)
	{
		/* a record larger than a page: pages_per_record consecutive pages */
		w->blkno = gateann_write_chunked(w->index, w->fork, GATEANN_PAGE_NODES, rec,
										 meta->record_size, w->blkno, w->wal);
		return;
	}
	if (w->slot == 0)
		gateann_init_page(w->page.data, GATEANN_PAGE_NODES);
	memcpy(PageGetContents(w->page.data) + w->slot * meta->record_size, rec,
		   meta->record_size);
	if (++w->slot == meta->records_per_page)
	{
		gateann_page_set_used(w->page.data, w->slot * meta->record_size);
		gateann_write_page(w->index, w->fork, w->blkno++, w->page.data, w->wal);
		w->slot = 0;
	}
}

BlockNumber
gateann_node_writer_finish(GateannNodeWriter *w)
{
	if (w->slot > 0)
	{
		gateann_page_set_used(w->page.data, w->slot * w->meta->record_size);
		gateann_write_page(w->index, w->fork, w->blkno++, w->page.data, w->wal);
		w->slot = 0;
	}
	return w->blkno;
}

bool
gateann_page_is_valid(Page page, uint16 kind)
{
	GateannPageOpaque opaque;

	if (PageIsNew(page) ||
		PageGetSpecialSize(page) != MAXALIGN(sizeof(GateannPageOpaqueData)))
		return false;
	opaque = GateannPageGetOpaque(page);
	return opaque->magic == GATEANN_MAGIC && opaque->kind == kind;
}

void
gateann_page_set_used(Page page, Size used)
{
	Assert(used <= GATEANN_PAGE_CAPACITY);
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + used;
}

GateannRecordLoc
gateann_record_location(const GateannMetaPageData *meta, uint32 node_id)
{
	GateannRecordLoc loc;

	if (meta->records_per_page > 0)
	{
		loc.block = meta->node_start + node_id / meta->records_per_page;
		loc.offset = (node_id % meta->records_per_page) * meta->record_size;
	}
	else
	{
		loc.block = meta->node_start + node_id * meta->pages_per_record;
		loc.offset = 0;
	}
	return loc;
}

void
gateann_record_check_node(Relation index, const GateannNodeHeader *hdr, uint32 node_id)
{
	if (hdr->node_id != node_id)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gateann index \"%s\": record of node %u holds node %u",
						RelationGetRelationName(index), node_id, hdr->node_id),
				 errhint("REINDEX the index.")));
}

/* The check's coverage is fixed by the header's layout */
StaticAssertDecl(offsetof(GateannNodeHeader, flags) ==
				 offsetof(GateannNodeHeader, heap_tid) + sizeof(ItemPointerData),
				 "the check covers node_id, version and heap_tid, which precede flags");
StaticAssertDecl(MAXALIGN(sizeof(GateannNodeHeader)) == 24,
				 "the record header keeps its on-disk size");

static uint32
record_check(const GateannMetaPageData *meta, const char *rec)
{
	pg_crc32c	crc;
	uint16		tail = GateannRecordHeader(rec)->flags & GATEANN_NODE_TAIL;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, rec, offsetof(GateannNodeHeader, flags));
	/* (only when set: a graph node's check covers what format 3's did) */
	if (tail != 0)
		COMP_CRC32C(crc, &tail, sizeof(tail));
	COMP_CRC32C(crc, rec + meta->vector_offset, gateann_record_vector_bytes(meta));
	if (meta->filter_size > 0)
		COMP_CRC32C(crc, rec + meta->filter_offset, meta->filter_size);
	FIN_CRC32C(crc);
	return crc;
}

void
gateann_record_seal(const GateannMetaPageData *meta, char *rec)
{
	GateannRecordHeader(rec)->check = record_check(meta, rec);
}

bool
gateann_record_intact(const GateannMetaPageData *meta, const char *rec)
{
	return GateannRecordHeader(rec)->check == record_check(meta, rec);
}

/*
 * Read block blkno of the index and lock it in mode; an error if it is not
 * a node page (the index is damaged)
 */
static Buffer
lock_node_page(Relation index, BlockNumber blkno, BufferAccessStrategy strategy, int mode)
{
	Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, strategy);

	LockBuffer(buf, mode);
	if (!gateann_page_is_valid(BufferGetPage(buf), GATEANN_PAGE_NODES))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gateann index \"%s\": block %u is not a node page",
						RelationGetRelationName(index), blkno),
				 errhint("REINDEX the index.")));
	return buf;
}

int
gateann_read_record(Relation index, const GateannMetaPageData *meta,
					uint32 node_id, char *dst, BufferAccessStrategy strategy)
{
	GateannRecordLoc loc = gateann_record_location(meta, node_id);
	uint32		remaining = meta->record_size;
	int			pages = 0;
	BlockNumber blkno = loc.block;

	while (remaining > 0)
	{
		Buffer		buf;
		Page		page;
		uint32		chunk;

		buf = lock_node_page(index, blkno, strategy, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		chunk = Min(remaining, (uint32) GATEANN_PAGE_CAPACITY - loc.offset);
		memcpy(dst, PageGetContents(page) + loc.offset, chunk);
		UnlockReleaseBuffer(buf);

		dst += chunk;
		remaining -= chunk;
		loc.offset = 0;
		blkno++;
		pages++;
	}
	return pages;
}

Buffer
gateann_pin_resident(Relation index, BlockNumber blkno, pg_atomic_uint32 *hint)
{
	BufferTag	tag;
	uint32		hash;
	LWLock	   *partition;
	int			buf_id;
	Buffer		buf;

	if (hint != NULL)
	{
		buf = (Buffer) pg_atomic_read_u32(hint);
		if (BufferIsValid(buf) && buf <= NBuffers &&
			gateann_read_recent_buffer(index, blkno, buf))
			return buf;
	}
	gateann_buffer_tag(&tag, index, blkno);
	hash = BufTableHashCode(&tag);
	partition = BufMappingPartitionLock(hash);
	LWLockAcquire(partition, LW_SHARED);
	buf_id = BufTableLookup(&tag, hash);
	LWLockRelease(partition);
	if (buf_id < 0 || !gateann_read_recent_buffer(index, blkno, buf_id + 1))
		return InvalidBuffer;	/* not there, or evicted meanwhile */
	if (hint != NULL)
		pg_atomic_write_u32(hint, (uint32) (buf_id + 1));
	return buf_id + 1;
}

bool
gateann_read_record_resident(Relation index, const GateannMetaPageData *meta,
							 uint32 node_id, char *dst, pg_atomic_uint32 *hints, uint32 nhints,
							 char *page_dst)
{
	GateannRecordLoc loc = gateann_record_location(meta, node_id);
	uint32		remaining = meta->record_size;
	BlockNumber blkno = loc.block;

	while (remaining > 0)
	{
		uint32		b = blkno - meta->node_start;
		Buffer		buf = gateann_pin_resident(index, blkno,
											   hints != NULL && b < nhints ? &hints[b] : NULL);
		Page		page;
		uint32		chunk;

		if (!BufferIsValid(buf))
			return false;
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!gateann_page_is_valid(page, GATEANN_PAGE_NODES))
		{
			UnlockReleaseBuffer(buf);
			return false;		/* the buffer manager's reader says why */
		}
		chunk = Min(remaining, (uint32) GATEANN_PAGE_CAPACITY - loc.offset);
		memcpy(dst, PageGetContents(page) + loc.offset, chunk);
		if (page_dst != NULL && meta->pages_per_record == 1)
			memcpy(page_dst, page, BLCKSZ);
		UnlockReleaseBuffer(buf);
		dst += chunk;
		remaining -= chunk;
		loc.offset = 0;
		blkno++;
	}
	return true;
}

void
gateann_read_intact_record(Relation index, const GateannMetaPageData *meta,
						   uint32 node_id, char *dst)
{
	int			attempt;

	/*
	 * Pages of a record that spans several are copied one lock at a time, so
	 * a slot freed and reused between two of them gives a mix: read again
	 * before calling it corrupted.  A record on one page is copied whole.
	 */
	for (attempt = 1;; attempt++)
	{
		gateann_read_record(index, meta, node_id, dst, NULL);
		if (gateann_record_usable(meta, dst))
			return;
		if (meta->pages_per_record == 1 || attempt == 3)
			break;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("gateann index \"%s\" is damaged: the record of node %u does not match its check",
					RelationGetRelationName(index), node_id),
			 errdetail("Its vector, heap TID or filter copies are not what was written."),
			 errhint("REINDEX the index.")));
}

void
gateann_read_header(Relation index, const GateannMetaPageData *meta, uint32 node_id,
					GateannNodeHeader *hdr)
{
	GateannRecordLoc loc = gateann_record_location(meta, node_id);
	Buffer		buf = lock_node_page(index, loc.block, NULL, BUFFER_LOCK_SHARE);

	memcpy(hdr, PageGetContents(BufferGetPage(buf)) + loc.offset, sizeof(GateannNodeHeader));
	UnlockReleaseBuffer(buf);
}

/* ---- editing a record in place ------------------------------------------ */

/* Which page of node id's record holds record byte `from`, and where in it */
static inline void
record_byte_position(const GateannMetaPageData *meta, uint32 id, uint32 from,
					 uint32 *page_index, uint32 *offset)
{
	GateannRecordLoc loc = gateann_record_location(meta, id);

	if (meta->records_per_page > 0)
	{
		*page_index = 0;
		*offset = loc.offset + from;
	}
	else
	{
		*page_index = from / GATEANN_PAGE_CAPACITY;
		*offset = from % GATEANN_PAGE_CAPACITY;
	}
}

static int
edit_slot(const GateannRecordEdit *ed, uint32 page_index)
{
	int			i;

	for (i = 0; i < ed->npages; i++)
		if (ed->page_index[i] == page_index)
			return i;
	elog(ERROR, "gateann: record page %u is not locked", page_index);
	return -1;					/* keep compiler quiet */
}

void
gateann_record_bytes(const GateannMetaPageData *meta, GateannRecordEdit *ed,
					 uint32 from, uint32 len, char *buf, bool write)
{
	while (len > 0)
	{
		uint32		page_index,
					offset,
					chunk;
		char	   *p;

		record_byte_position(meta, ed->id, from, &page_index, &offset);
		chunk = Min(len, (uint32) GATEANN_PAGE_CAPACITY - offset);
		p = PageGetContents(ed->pages[edit_slot(ed, page_index)]) + offset;
		if (write)
			memcpy(p, buf, chunk);
		else
			memcpy(buf, p, chunk);
		buf += chunk;
		from += chunk;
		len -= chunk;
	}
}

void
gateann_record_lock(Relation index, const GateannMetaPageData *meta, uint32 id,
					GateannRecordEdit *ed)
{
	GateannRecordLoc loc = gateann_record_location(meta, id);
	uint32		ranges[2][2] = {{0, sizeof(GateannNodeHeader)},
	{meta->neighbors_offset, sizeof(uint32) * meta->max_neighbors}};
	int			r,
				i;

	memset(ed, 0, sizeof(*ed));
	ed->id = id;
	for (r = 0; r < 2; r++)
	{
		uint32		first,
					last,
					offset,
					k;

		record_byte_position(meta, id, ranges[r][0], &first, &offset);
		record_byte_position(meta, id, ranges[r][0] + ranges[r][1] - 1, &last, &offset);
		for (k = first; k <= last; k++)
		{
			bool		have = false;

			for (i = 0; i < ed->npages; i++)
				have |= ed->page_index[i] == k;
			if (!have)
			{
				if (ed->npages >= GATEANN_EDIT_PAGES)
					elog(ERROR, "gateann: a neighbor list spans more than %d pages",
						 GATEANN_EDIT_PAGES);
				ed->page_index[ed->npages++] = k;
			}
		}
	}
	/* page_index values were added in increasing order: block order */
	for (i = 0; i < ed->npages; i++)
	{
		BlockNumber blkno = loc.block + ed->page_index[i];

		ed->bufs[i] = lock_node_page(index, blkno, NULL, BUFFER_LOCK_EXCLUSIVE);
		ed->pages[i] = BufferGetPage(ed->bufs[i]);
	}
}

int
gateann_record_get_list(const GateannMetaPageData *meta, GateannRecordEdit *ed,
						GateannNodeHeader *hdr, uint32 *list)
{
	int			n;

	gateann_record_bytes(meta, ed, 0, sizeof(GateannNodeHeader), (char *) hdr, false);
	n = Min((int) hdr->nneighbors, meta->max_neighbors);
	gateann_record_bytes(meta, ed, meta->neighbors_offset, sizeof(uint32) * n,
						 (char *) list, false);
	return n;
}

Page
gateann_record_begin_change(Relation index, GateannRecordEdit *ed, Buffer also)
{
	Page		also_page = NULL;
	int			i;

	ed->state = GenericXLogStart(index);
	for (i = 0; i < ed->npages; i++)
		ed->pages[i] = GenericXLogRegisterBuffer(ed->state, ed->bufs[i], 0);
	if (BufferIsValid(also))
		also_page = GenericXLogRegisterBuffer(ed->state, also, 0);
	return also_page;
}

void
gateann_record_put_list(const GateannMetaPageData *meta, GateannRecordEdit *ed,
						uint16 flags, const uint32 *list, int n)
{
	uint32		full[GATEANN_MAX_NEIGHBORS_LIMIT];
	uint16		nn = (uint16) n;
	int			i;

	Assert(ed->state != NULL && n <= meta->max_neighbors);
	memcpy(full, list, sizeof(uint32) * n);
	for (i = n; i < meta->max_neighbors; i++)
		full[i] = InvalidNodeId;
	gateann_record_bytes(meta, ed, offsetof(GateannNodeHeader, flags), sizeof(uint16),
						 (char *) &flags, true);
	gateann_record_bytes(meta, ed, offsetof(GateannNodeHeader, nneighbors), sizeof(uint16),
						 (char *) &nn, true);
	gateann_record_bytes(meta, ed, meta->neighbors_offset,
						 sizeof(uint32) * meta->max_neighbors, (char *) full, true);
}

void
gateann_record_finish_change(GateannRecordEdit *ed)
{
	int			i;

	GenericXLogFinish(ed->state);
	ed->state = NULL;
	for (i = 0; i < ed->npages; i++)
		ed->pages[i] = BufferGetPage(ed->bufs[i]);
}

void
gateann_record_unlock(GateannRecordEdit *ed)
{
	int			i;

	Assert(ed->state == NULL);
	for (i = 0; i < ed->npages; i++)
		UnlockReleaseBuffer(ed->bufs[i]);
	ed->npages = 0;
}

void
gateann_record_set_vector(const GateannMetaPageData *meta, char *rec, const float *v)
{
	if (meta->record_precision == GATEANN_PRECISION_HALF)
		(void) gateann_half_encode(v, meta->dims, (uint16 *) (rec + meta->vector_offset));
	else
		memcpy(rec + meta->vector_offset, v, sizeof(float) * meta->dims);
}

float
gateann_half_error_bound(double error)
{
	float		f = (float) Min(error, (double) FLT_MAX);

	return (double) f < error ? nextafterf(f, FLT_MAX) : f;
}

void
gateann_report_half_range(Relation index, const char *what, const float *v, int dims)
{
	int			i;

	for (i = 0; i < dims - 1 && fabsf(v[i]) < 65520.0f; i++)
		;
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("%s has value %g in dimension %d, out of range for the half-precision records of gateann index \"%s\"",
					what, (double) v[i], i + 1, RelationGetRelationName(index)),
			 errdetail("Half precision holds values of magnitude below %g.", 65520.0),
			 errhint("Use record_precision = single for this index (for an existing one: ALTER INDEX ... SET (record_precision = single), then REINDEX).")));
}
