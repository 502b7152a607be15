/*
 * page.c — page initialisation, metapage access, record addressing.
 */
#include "postgres.h"

#include "filter.h"
#include "page.h"
#include "pq.h"

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
gateann_read_meta_unchecked(Relation index, GateannMetaPageData *meta)
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

void
gateann_read_meta(Relation index, GateannMetaPageData *meta)
{
	char	   *problem;

	gateann_read_meta_unchecked(index, meta);
	problem = gateann_meta_problem(meta, index);
	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gateann index \"%s\" is damaged: its metapage %s",
						RelationGetRelationName(index), problem),
				 errhint("REINDEX the index.")));
}

/* Does the region [start, start + pages) lie within nblocks, past the metapage? */
static bool
region_ok(BlockNumber start, BlockNumber pages, BlockNumber nblocks)
{
	return start >= 1 && (uint64) start + pages <= nblocks;
}

char *
gateann_meta_problem(const GateannMetaPageData *m, Relation index)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	TupleDesc	desc = RelationGetDescr(index);
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	GateannMetaPageData layout;
	uint32		i;
	int			c;

	if (m->dims < 0 || m->dims > GATEANN_MAX_DIMS)
		return psprintf("gives %d dimensions", m->dims);
	if (m->metric < GATEANN_METRIC_L2 || m->metric > GATEANN_METRIC_COSINE)
		return psprintf("gives an unknown metric %d", m->metric);
	if (m->max_neighbors < 1 || m->max_neighbors > GATEANN_MAX_NEIGHBORS_LIMIT)
		return psprintf("gives max_neighbors %d", m->max_neighbors);
	if (m->nnodes > GATEANN_MAX_NODES || (uint64) m->ndeleted + m->nfree > m->nnodes)
		return psprintf("counts %u nodes, %u deleted and %u free", m->nnodes, m->ndeleted,
						m->nfree);
	if (m->nnodes > 0 && m->dims == 0)
		return psprintf("counts %u nodes of no dimensions", m->nnodes);
	if (m->nnodes > 0 && m->entry_point >= m->nnodes)
		return psprintf("gives entry point %u of %u nodes", m->entry_point, m->nnodes);
	if (m->nentries > GATEANN_MAX_ENTRIES)
		return psprintf("gives %u entry points", m->nentries);
	for (i = 0; i < m->nentries; i++)
		if (m->entries[i] >= m->nnodes)
			return psprintf("gives entry point %u as node %u of %u", i, m->entries[i],
							m->nnodes);
	if (m->free_cursor > m->nnodes)
		return psprintf("gives free cursor %u of %u nodes", m->free_cursor, m->nnodes);
	if (m->dims > 0 && (m->pq_subspaces < 1 || m->pq_subspaces > m->dims ||
						m->pq_subspaces > GATEANN_PQ_MAX_SUBSPACES))
		return psprintf("gives %d PQ subspaces for %d dimensions", m->pq_subspaces, m->dims);
	if (m->nfilter < 0 || m->nfilter > GATEANN_MAX_FILTER_COLS)
		return psprintf("gives %d filter columns", m->nfilter);
	if (m->nfilter != nkeys - 1)
		return psprintf("gives %d filter columns for an index of %d", m->nfilter, nkeys - 1);
	for (c = 0; c < m->nfilter; c++)
	{
		const GateannFilterColumn *f = &m->filter[c];
		Form_pg_attribute att = TupleDescAttr(desc, c + 1);

		/* the type decides how a copy is read: it must be the column's */
		if (f->typid != att->atttypid || f->typlen != att->attlen ||
			f->typbyval != att->attbyval || f->typalign != att->attalign)
			return psprintf("gives filter column %d a type other than its own", c + 2);
		/* ... and how the filter store keeps it (a dictionary or Bloom bits) */
		if (f->kind != gateann_filter_column_kind(att->atttypid))
			return psprintf("gives filter column %d a kind other than its type's", c + 2);
		if ((uint32) f->offset + f->width > m->filter_size ||
			(uint64) f->dict_offset + f->dict_bytes > m->dict_bytes)
			return psprintf("places filter column %d outside its area", c + 2);
	}

	/* the record layout follows from the rest */
	layout = *m;
	gateann_layout_records(&layout);
	if (layout.record_size != m->record_size || layout.vector_offset != m->vector_offset ||
		layout.neighbors_offset != m->neighbors_offset ||
		layout.pqcode_offset != m->pqcode_offset || layout.filter_offset != m->filter_offset ||
		layout.records_per_page != m->records_per_page ||
		layout.pages_per_record != m->pages_per_record)
		return pstrdup("gives a record layout its dimensions and columns do not make");

	/* regions within the index */
	if (m->dims > 0 && m->codebook_pages > 0 &&
		(!region_ok(m->codebook_start, m->codebook_pages, nblocks) ||
		 (Size) m->codebook_pages * GATEANN_PAGE_CAPACITY <
		 gateann_pq_codebook_bytes(m->dims)))
		return psprintf("places the codebook at blocks %u..+%u of %u", m->codebook_start,
						m->codebook_pages, nblocks);
	if (m->nnodes > 0 && m->codebook_pages == 0)
		return psprintf("counts %u nodes and no codebook", m->nnodes);
	if (m->dict_pages > 0 &&
		(!region_ok(m->dict_start, m->dict_pages, nblocks) ||
		 (Size) m->dict_pages * GATEANN_PAGE_CAPACITY < m->dict_bytes))
		return psprintf("places the dictionaries at blocks %u..+%u of %u", m->dict_start,
						m->dict_pages, nblocks);
	if (m->dict_area_pages > 0 && !region_ok(m->dict_area_start, m->dict_area_pages, nblocks))
		return psprintf("places the dictionary areas at blocks %u..+%u of %u",
						m->dict_area_start, m->dict_area_pages, nblocks);
	if (m->node_pages > 0 && !region_ok(m->node_start, m->node_pages, nblocks))
		return psprintf("places the node pages at blocks %u..+%u of %u", m->node_start,
						m->node_pages, nblocks);
	if (m->records_per_page > 0 ?
		(uint64) m->node_pages * m->records_per_page < m->nnodes :
		(uint64) m->node_pages < (uint64) m->nnodes * m->pages_per_record)
		return psprintf("gives %u node pages for %u nodes", m->node_pages, m->nnodes);
	return NULL;
}

/* The record layout of meta's dims, R, M and filter columns (page.h) */
void
gateann_layout_records(GateannMetaPageData *meta)
{
	uint32		off = MAXALIGN(sizeof(GateannNodeHeader));

	meta->vector_offset = off;
	off += sizeof(float) * meta->dims;
	meta->neighbors_offset = off;
	off += sizeof(uint32) * meta->max_neighbors;
	meta->pqcode_offset = off;
	off += gateann_pq_code_bytes(meta->pq_subspaces);
	off = MAXALIGN(off);
	meta->filter_offset = off;
	off += meta->filter_size;
	meta->record_size = MAXALIGN(off);

	if (meta->record_size <= GATEANN_PAGE_CAPACITY)
	{
		meta->records_per_page = GATEANN_PAGE_CAPACITY / meta->record_size;
		meta->pages_per_record = 1;
	}
	else
	{
		meta->records_per_page = 0;
		meta->pages_per_record = (meta->record_size + GATEANN_PAGE_CAPACITY - 1) /
			GATEANN_PAGE_CAPACITY;
	}
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

void
gateann_read_header(Relation index, const GateannMetaPageData *meta, uint32 node_id,
					GateannNodeHeader *hdr)
{
	GateannRecordLoc loc = gateann_record_location(meta, node_id);
	Buffer		buf = ReadBuffer(index, loc.block);
	Page		page;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (!gateann_page_is_valid(page, GATEANN_PAGE_NODES))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gateann index \"%s\": block %u is not a node page",
						RelationGetRelationName(index), loc.block),
				 errhint("REINDEX the index.")));
	memcpy(hdr, PageGetContents(page) + loc.offset, sizeof(GateannNodeHeader));
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

		ed->bufs[i] = ReadBuffer(index, blkno);
		LockBuffer(ed->bufs[i], BUFFER_LOCK_EXCLUSIVE);
		ed->pages[i] = BufferGetPage(ed->bufs[i]);
		if (!gateann_page_is_valid(ed->pages[i], GATEANN_PAGE_NODES))
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gateann index \"%s\": block %u is not a node page",
							RelationGetRelationName(index), blkno),
					 errhint("REINDEX the index.")));
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
