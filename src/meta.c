/*
 * meta.c — the metapage: reading it (with every value checked once), the
 * record layout it implies, build ids, and changes to it.
 *
 * Block 0 holds one GateannMetaPageData (gateann.h).  Its writers:
 *
 *   build       gateann_write_meta_page, without WAL (the build logs the
 *               whole relation afterwards)
 *   retraining  gateann_meta_update_begin/finish (retrain.c): the new
 *               codebook's fields, or the first row's layout as a full image
 *   VACUUM      gateann_meta_update_begin/finish (vacuum.c): deleted count,
 *               entry points, the reachability count a walk covered; a
 *               freed slot's counts in the same GenericXLog record as that
 *               record's pages
 *   insert      in the same GenericXLog record as the record pages it writes
 *               (insert.c)
 *
 * The last two reach the contents through GateannPageGetMeta and change
 * them with the gateann_meta_* mutators below, which keep its rules.
 *
 * Every writer holds the metapage's buffer lock exclusively while it
 * changes the page; readers copy it under a share lock.  Which fields a
 * writer may change while others run is said where it changes them
 * (retraining: only its own, as VACUUM may change the others meanwhile).
 */
#include "postgres.h"

#include "filter.h"
#include "meta.h"
#include "page.h"
#include "pq.h"

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

/*
 * Copy the metapage into *meta; false, with nothing copied, when block 0 is
 * not a gateann metapage.
 */
static bool
copy_meta_page(Relation index, GateannMetaPageData *meta)
{
	Buffer		buf;
	Page		page;
	bool		valid;

	buf = ReadBuffer(index, GATEANN_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	valid = gateann_page_is_valid(page, GATEANN_PAGE_META) &&
		GateannPageGetMeta(page)->magic == GATEANN_MAGIC;
	if (valid)
		memcpy(meta, PageGetContents(page), sizeof(GateannMetaPageData));
	UnlockReleaseBuffer(buf);
	return valid;
}

void
gateann_read_meta_unchecked(Relation index, GateannMetaPageData *meta)
{
	if (!copy_meta_page(index, meta))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a valid gateann index",
						RelationGetRelationName(index)),
				 errhint("REINDEX the index.")));

	if (meta->format_version != GATEANN_FORMAT_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gateann index \"%s\" has on-disk format version %u, this server supports %d",
						RelationGetRelationName(index), meta->format_version,
						GATEANN_FORMAT_VERSION),
				 errhint("REINDEX the index.")));
}

bool
gateann_peek_meta(Relation index, GateannMetaPageData *meta)
{
	return copy_meta_page(index, meta) &&
		meta->format_version == GATEANN_FORMAT_VERSION &&
		gateann_meta_problem(meta, index) == NULL;
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
	if (m->record_precision != GATEANN_PRECISION_SINGLE &&
		m->record_precision != GATEANN_PRECISION_HALF)
		return psprintf("gives an unknown record precision %d", m->record_precision);
	/* (a bound taken off distances: NaN or negative would make it none) */
	if (!(m->record_error >= 0 && m->record_error < 1e30f) ||
		(m->record_precision == GATEANN_PRECISION_SINGLE && m->record_error != 0))
		return psprintf("gives a record error of %g", (double) m->record_error);
	if (m->max_neighbors < 1 || m->max_neighbors > GATEANN_MAX_NEIGHBORS_LIMIT)
		return psprintf("gives max_neighbors %d", m->max_neighbors);
	if (m->nnodes > GATEANN_MAX_NODES || (uint64) m->ndeleted + m->nfree > m->nnodes)
		return psprintf("counts %u nodes, %u deleted and %u free", m->nnodes, m->ndeleted,
						m->nfree);
	if (m->reach_checked > m->reach_changes)
		return psprintf("says a walk checked %llu changes of %llu",
						(unsigned long long) m->reach_checked,
						(unsigned long long) m->reach_changes);
	/* (an index that has seen no vector yet holds only tail records) */
	if (m->dims == 0 && (m->entry_point != InvalidNodeId || m->nentries > 0))
		return psprintf("gives an entry point to an index of no dimensions");
	/* (no entry point: no node of the graph yet, tail records at most) */
	if (m->entry_point != InvalidNodeId && m->entry_point >= m->nnodes)
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
	if (m->nnodes > 0 && m->dims > 0 && m->codebook_pages == 0)
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
	off += gateann_record_vector_bytes(meta);
	off = TYPEALIGN(sizeof(uint32), off);
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

/* A build id that differs between any two builds of any index. */
uint64
gateann_new_build_id(Relation index)
{
	uint64		id = (uint64) GetCurrentTimestamp();

	id ^= ((uint64) MyProcPid << 40);
	id ^= ((uint64) GATEANN_REL_FILENUMBER(index) << 20);
	return id == 0 ? 1 : id;
}

/*
 * Rewrite block 0 of `fork` with meta.  Used during build only (no WAL here:
 * the caller logs the whole range afterwards).
 */
void
gateann_write_meta_page(Relation index, ForkNumber fork, const GateannMetaPageData *meta)
{
	Buffer		buf = ReadBufferExtended(index, fork, GATEANN_METAPAGE_BLKNO,
										 RBM_NORMAL, NULL);
	Page		page;

	StaticAssertStmt(sizeof(GateannMetaPageData) <= GATEANN_PAGE_CAPACITY,
					 "the metapage contents must fit in one page");
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	page = BufferGetPage(buf);
	gateann_init_page(page, GATEANN_PAGE_META);
	memcpy(PageGetContents(page), meta, sizeof(GateannMetaPageData));
	gateann_page_set_used(page, sizeof(GateannMetaPageData));
	MarkBufferDirty(buf);
	UnlockReleaseBuffer(buf);
}

GateannMetaPageData *
gateann_meta_update_begin(Relation index, GateannMetaUpdate *u, bool full_image)
{
	u->buf = ReadBuffer(index, GATEANN_METAPAGE_BLKNO);
	LockBuffer(u->buf, BUFFER_LOCK_EXCLUSIVE);
	u->state = GenericXLogStart(index);
	u->page = GenericXLogRegisterBuffer(u->state, u->buf,
										full_image ? GENERIC_XLOG_FULL_IMAGE : 0);
	return GateannPageGetMeta(u->page);
}

void
gateann_meta_update_finish(GateannMetaUpdate *u)
{
	GenericXLogFinish(u->state);
	UnlockReleaseBuffer(u->buf);
}

void
gateann_meta_set_entry_point(GateannMetaPageData *m, uint32 id)
{
	m->entry_point = id;
	if (m->nentries > 0)
		m->entries[0] = id;
	Assert(m->nentries == 0 || m->entries[0] == m->entry_point);
}

void
gateann_meta_set_freeing_slots(GateannMetaPageData *m, bool freeing)
{
	m->freeing_slots = freeing ? 1 : 0;
}

void
gateann_meta_free_slot(GateannMetaPageData *m, uint32 id)
{
	Assert(id < m->nnodes);
	if (m->ndeleted > 0)
		m->ndeleted--;
	if (m->nfree == 0 || id < m->free_cursor)
		m->free_cursor = id;
	m->nfree++;
	/* the repaired lists may no longer lead to what lay behind the slot */
	m->reach_changes++;
}

void
gateann_meta_take_slot(GateannMetaPageData *m, uint32 id)
{
	Assert(m->nfree > 0 && id < m->nnodes);
	m->nfree--;
	m->free_cursor = id + 1;
	m->reuse_log[m->reuse_count % GATEANN_REUSE_LOG] = id;
	m->reuse_count++;
	m->reach_changes++;
}

void
gateann_meta_append_node(GateannMetaPageData *m, uint32 id, BlockNumber node_pages)
{
	Assert(id == m->nnodes);
	m->nnodes = id + 1;
	m->node_pages = Max(m->node_pages, node_pages);
	m->reach_changes++;
}

int
gateann_meta_walk_roots(const GateannMetaPageData *m, uint32 *roots)
{
	int			n = 0;
	uint32		i;

	roots[n++] = m->entry_point;
	for (i = 0; i < m->nentries && i < GATEANN_MAX_ENTRIES; i++)
		roots[n++] = m->entries[i];
	return n;
}

void
gateann_meta_cover_record_error(GateannMetaPageData *m, float error)
{
	if (error > m->record_error)
		m->record_error = error;
}

void
gateann_meta_add_deleted(GateannMetaPageData *m, uint32 n)
{
	m->ndeleted += n;
	Assert((uint64) m->ndeleted + m->nfree <= m->nnodes);
}

void
gateann_meta_count_code(GateannMetaPageData *m, bool poor)
{
	m->pq_coded++;
	if (poor)
		m->pq_poor++;
}

void
gateann_meta_set_entries(GateannMetaPageData *m, const uint32 *entries, uint32 n)
{
	Assert(n <= GATEANN_MAX_ENTRIES);
	memmove(m->entries, entries, sizeof(uint32) * n);
	m->nentries = n;
	if (n > 0)
		m->entries[0] = m->entry_point;
}

bool
gateann_meta_add_entry(GateannMetaPageData *m, uint32 id)
{
	uint32		k;

	if (m->entry_point == InvalidNodeId)
		return false;
	if (m->nentries == 0)
		m->entries[m->nentries++] = m->entry_point;
	for (k = 0; k < m->nentries; k++)
		if (m->entries[k] == id)
			return false;
	if (m->nentries >= GATEANN_MAX_ENTRIES)
		return false;
	m->entries[m->nentries++] = id;
	return true;
}

void
gateann_meta_set_reach_checked(Relation index, uint64 changes)
{
	GateannMetaUpdate u;
	GateannMetaPageData now;
	GateannMetaPageData *m;

	/* (nothing to log when no change came before the walk, the usual VACUUM) */
	gateann_read_meta_unchecked(index, &now);
	if (now.reach_checked >= changes)
		return;
	m = gateann_meta_update_begin(index, &u, false);
	/* (another VACUUM cannot run meanwhile; a later walk's count stays) */
	if (m->reach_checked < changes)
		m->reach_checked = changes;
	gateann_meta_update_finish(&u);
}
