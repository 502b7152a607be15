/*
 * page.h — page initialisation, metapage access, and the mapping from node
 * id to the block(s) and byte offset of its record.
 */
#ifndef GATEANN_PAGE_H
#define GATEANN_PAGE_H

#include "gateann.h"

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
 * Read the metapage into *meta (a copy; no lock or pin is kept).  Errors out
 * with ERRCODE_INDEX_CORRUPTED if the metapage is not a gateann metapage.
 */
extern void gateann_read_meta(Relation index, GateannMetaPageData *meta);

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

/* Accessors for a record held in memory */
#define GateannRecordHeader(rec)	((GateannNodeHeader *) (rec))
#define GateannRecordVector(meta, rec)	((float *) ((char *) (rec) + (meta)->vector_offset))
#define GateannRecordNeighbors(meta, rec)	((uint32 *) ((char *) (rec) + (meta)->neighbors_offset))
#define GateannRecordPQCode(meta, rec)	((uint8 *) ((char *) (rec) + (meta)->pqcode_offset))
#define GateannRecordFilter(meta, rec)	((uint8 *) ((char *) (rec) + (meta)->filter_offset))

#endif							/* GATEANN_PAGE_H */
