/*
 * page.h — page initialisation, and the mapping from node id to the block(s)
 * and byte offset of its record, and record access.
 */
#ifndef GATEANN_PAGE_H
#define GATEANN_PAGE_H

#include "gateann.h"
#include "half.h"

#include "access/generic_xlog.h"
#include "port/atomics.h"
#include "storage/bufmgr.h"

/* Where a node's record starts. */
typedef struct GateannRecordLoc
{
	BlockNumber block;			/* first block of the record */
	uint32		offset;			/* byte offset within that page's contents */
} GateannRecordLoc;

extern void gateann_init_page(Page page, uint16 kind);

/* A new, exclusively locked page at the end of `fork`. */
extern Buffer gateann_new_buffer(Relation index, ForkNumber fork);
extern bool gateann_page_is_valid(Page page, uint16 kind);

/* Set pd_lower so that `used` bytes of contents are kept in page images. */
extern void gateann_page_set_used(Page page, Size used);

/*
 * Writing whole pages in block order: CREATE INDEX writes without WAL (it
 * logs the whole relation afterwards), an index's first vector and
 * retraining log each page whole (wal; only a relation that is WAL-logged:
 * an unlogged index's main fork must not be recreated by replay).  A page
 * goes to blkno: appended when that is the fork's next block, else written
 * over the page there.
 *
 * gateann_write_page: one page image.
 * gateann_write_chunked: `total` bytes as consecutive pages of `kind`;
 *   returns the next block number.
 * GateannNodeWriter: records in node id order from id 0, packed as the
 *   record layout of meta says (records_per_page to a page, or
 *   pages_per_record pages each); finish returns the next block number.
 */
extern void gateann_write_page(Relation index, ForkNumber fork, BlockNumber blkno, Page image,
							   bool wal);
extern BlockNumber gateann_write_chunked(Relation index, ForkNumber fork, uint16 kind,
										 const char *data, Size total, BlockNumber blkno,
										 bool wal);

typedef struct GateannNodeWriter
{
	Relation	index;
	ForkNumber	fork;
	const GateannMetaPageData *meta;
	bool		wal;
	BlockNumber blkno;			/* of the page being filled */
	uint32		slot;			/* records on it so far */
	PGAlignedBlock page;
} GateannNodeWriter;

extern void gateann_node_writer_start(GateannNodeWriter *w, Relation index, ForkNumber fork,
									  const GateannMetaPageData *meta, BlockNumber blkno,
									  bool wal);
extern void gateann_node_writer_add(GateannNodeWriter *w, const char *rec);
extern BlockNumber gateann_node_writer_finish(GateannNodeWriter *w);

extern GateannRecordLoc gateann_record_location(const GateannMetaPageData *meta,
												uint32 node_id);

/*
 * Copy node_id's whole record into dst (meta->record_size bytes) through the
 * buffer manager, holding a share lock per page only while copying.
 * Returns the number of pages read.
 */
extern int	gateann_read_record(Relation index, const GateannMetaPageData *meta,
								uint32 node_id, char *dst,
								BufferAccessStrategy strategy);

/*
 * Block blkno of the index pinned if shared buffers hold it now, else
 * InvalidBuffer; never loads it (a look in the buffer mapping table, then a
 * pin that holds only if the buffer still holds the block).  *hint, when
 * not NULL, is a buffer that held the block once: tried first, and set to
 * the buffer found.  Main fork, shared buffers only (not for relations in
 * local buffers).
 */
extern Buffer gateann_pin_resident(Relation index, BlockNumber blkno, pg_atomic_uint32 *hint);

/*
 * Copy node id's record into dst if shared buffers hold every page of it,
 * each page copied under its share lock: no load, no I/O.  hints: per node
 * block (counted from meta->node_start), buffer hints for
 * gateann_pin_resident, or NULL.  page_dst, when not NULL and the record
 * lies on one page: that whole page is copied there too (page search).
 * False if a page is not there (dst then holds nothing usable).
 */
extern bool gateann_read_record_resident(Relation index, const GateannMetaPageData *meta,
										 uint32 node_id, char *dst, pg_atomic_uint32 *hints,
										 uint32 nhints, char *page_dst);

/*
 * ERROR (index corrupted) unless the record header read for node_id names
 * node_id: a reader that took a record from the wrong place must not use it.
 */
extern void gateann_record_check_node(Relation index, const GateannNodeHeader *hdr,
									  uint32 node_id);

/*
 * The record check: a CRC-32C of what is written once per slot incarnation
 * (the header up to its flags: node id, version and heap TID; a tail
 * record's tail flags; the vector; the filter copies), kept in the header.
 * What changes in place (the DELETED and FREE flags, neighbor count and
 * list, PQ code) is left out, so editing a record never touches it.  A scan that reads a record straight from the file and finds
 * the check wrong has a torn or corrupted copy (src/README, "Reading
 * records behind the buffer manager").
 *
 * gateann_record_seal sets it in a record assembled in memory, before the
 * record is written; gateann_record_intact says whether it matches.
 */
extern void gateann_record_seal(const GateannMetaPageData *meta, char *rec);
extern bool gateann_record_intact(const GateannMetaPageData *meta, const char *rec);

/*
 * gateann_read_record for a scan: ERROR (index corrupted) when a live record's
 * check is wrong in the copy the buffer manager holds.  (A deleted record is
 * never used, and its slot may be in the middle of being reused.)
 */
extern void gateann_read_intact_record(Relation index, const GateannMetaPageData *meta,
									   uint32 node_id, char *dst);

/* Copy node_id's record header (share-locking its first page meanwhile). */
extern void gateann_read_header(Relation index, const GateannMetaPageData *meta,
								uint32 node_id, GateannNodeHeader *hdr);

/*
 * Editing a record in place (inserts' reverse edges, VACUUM's repairs): the
 * pages holding its header and its neighbor list, exclusively locked in
 * block order, changed under one generic WAL record.  A list never spans
 * more than GATEANN_EDIT_PAGES pages, and one more buffer (the metapage)
 * fits in the same WAL record.
 */
#define GATEANN_EDIT_PAGES	3

typedef struct GateannRecordEdit
{
	uint32		id;
	int			npages;
	uint32		page_index[GATEANN_EDIT_PAGES];	/* page within the record */
	Buffer		bufs[GATEANN_EDIT_PAGES];
	Page		pages[GATEANN_EDIT_PAGES];	/* buffer pages, or WAL copies */
	GenericXLogState *state;
} GateannRecordEdit;

/* Lock node id's header and list pages exclusively (errors on a bad page). */
extern void gateann_record_lock(Relation index, const GateannMetaPageData *meta,
								uint32 id, GateannRecordEdit *ed);

/* Copy record bytes [from, from+len) between buf and the locked pages. */
extern void gateann_record_bytes(const GateannMetaPageData *meta, GateannRecordEdit *ed,
								 uint32 from, uint32 len, char *buf, bool write);

/* The locked record's header and (up to max_neighbors of) its list. */
extern int	gateann_record_get_list(const GateannMetaPageData *meta, GateannRecordEdit *ed,
									GateannNodeHeader *hdr, uint32 *list);

/*
 * Start a change: from now on the edit's pages are WAL copies.  `also`, if
 * valid, is registered in the same record (locked by the caller); its copy
 * is returned.
 */
extern Page gateann_record_begin_change(Relation index, GateannRecordEdit *ed, Buffer also);

/* Write flags and a new list (n ids, the rest of the list cleared). */
extern void gateann_record_put_list(const GateannMetaPageData *meta, GateannRecordEdit *ed,
									uint16 flags, const uint32 *list, int n);

/* WAL-log the change; the pages stay locked. */
extern void gateann_record_finish_change(GateannRecordEdit *ed);
extern void gateann_record_unlock(GateannRecordEdit *ed);

/* Accessors for a record held in memory */
#define GateannRecordHeader(rec)	((GateannNodeHeader *) (rec))
#define GateannRecordNeighbors(meta, rec)	((uint32 *) ((char *) (rec) + (meta)->neighbors_offset))
#define GateannRecordPQCode(meta, rec)	((uint8 *) ((char *) (rec) + (meta)->pqcode_offset))
#define GateannRecordFilter(meta, rec)	((uint8 *) ((char *) (rec) + (meta)->filter_offset))

/* Bytes of a record's vector: 4 a dimension, 2 with record_precision = half */
static inline Size
gateann_record_vector_bytes(const GateannMetaPageData *meta)
{
	return (Size) Max(meta->dims, 0) *
		(meta->record_precision == GATEANN_PRECISION_HALF ? sizeof(uint16) : sizeof(float));
}

/*
 * A record's vector as floats: where it lies in the record (single
 * precision), else decoded into buf (room for dims floats), exactly.
 */
static inline const float *
gateann_record_vector(const GateannMetaPageData *meta, const char *rec, float *buf)
{
	if (meta->record_precision != GATEANN_PRECISION_HALF)
		return (const float *) (rec + meta->vector_offset);
	gateann_half_decode((const uint16 *) (rec + meta->vector_offset), meta->dims, buf);
	return buf;
}

/* The record's vector into out (dims floats) */
static inline void
gateann_record_copy_vector(const GateannMetaPageData *meta, const char *rec, float *out)
{
	const float *v = gateann_record_vector(meta, rec, out);

	if (v != out)
		memcpy(out, v, sizeof(float) * meta->dims);
}

/*
 * Write v (dims floats) as the record's vector.  With halves every value
 * must have a finite half (gateann_half_error >= 0).
 */
extern void gateann_record_set_vector(const GateannMetaPageData *meta, char *rec,
									  const float *v);

/*
 * Records of halves.  A vector's gateann_half_error (half.h) as a float not
 * below it, for meta->record_error; and the ERROR for a vector (`what`: "vector in
 * row ...") with a value that has no finite half.
 */
extern float gateann_half_error_bound(double error);
extern void gateann_report_half_range(Relation index, const char *what, const float *v,
									  int dims);

/*
 * May a scan use this copy of a record: deleted (never used, and its slot
 * may be mid-reuse, so not checked), or intact?
 */
static inline bool
gateann_record_usable(const GateannMetaPageData *meta, const char *rec)
{
	return (GateannRecordHeader(rec)->flags & GATEANN_NODE_DELETED) ||
		gateann_record_intact(meta, rec);
}

#endif							/* GATEANN_PAGE_H */
