/*
 * page.c — page initialisation, metapage access, record addressing.
 */
#include "postgres.h"

#include "page.h"

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
#if PG_VERSION_NUM >= 160000
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

void
gateann_read_meta(Relation index, GateannMetaPageData *meta)
{
	Buffer		buf;
	Page		page;

	buf = ReadBuffer(index, GATEANN_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (!gateann_page_is_valid(page, GATEANN_PAGE_META) ||
		((GateannMetaPageData *) PageGetContents(page))->magic != GATEANN_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a valid gateann index",
						RelationGetRelationName(index)),
				 errhint("REINDEX the index.")));
	memcpy(meta, PageGetContents(page), sizeof(GateannMetaPageData));
	UnlockReleaseBuffer(buf);

	if (meta->format_version != GATEANN_FORMAT_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gateann index \"%s\" has on-disk format version %u, this server supports %d",
						RelationGetRelationName(index), meta->format_version,
						GATEANN_FORMAT_VERSION),
				 errhint("REINDEX the index.")));
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

		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!gateann_page_is_valid(page, GATEANN_PAGE_NODES))
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gateann index \"%s\": block %u is not a node page",
							RelationGetRelationName(index), blkno),
					 errhint("REINDEX the index.")));
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
