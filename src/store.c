/*
 * store.c — backend-local in-memory stores (PQ codebook and codes).
 */
#include "postgres.h"

#include "store.h"
#include "page.h"

#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

/* Keep at most this many indexes' stores per backend. */
#define MAX_CACHED_STORES	8

static GateannStore *store_list = NULL;

static bool
store_matches(const GateannStore *s, Relation index, const GateannMetaPageData *meta)
{
	return s->indexoid == RelationGetRelid(index) &&
		s->dboid == GATEANN_REL_DATABASE(index) &&
		s->spcoid == GATEANN_REL_TABLESPACE(index) &&
		s->relfilenumber == GATEANN_REL_FILENUMBER(index) &&
		s->build_id == meta->build_id &&
		s->nnodes == meta->nnodes;
}

static void
store_free(GateannStore *s)
{
	MemoryContextDelete(s->cxt);
}

/* Unlink and free every store of indexoid, and the oldest beyond the cap. */
static void
store_evict(Oid indexoid)
{
	GateannStore **prev = &store_list;
	GateannStore *s;
	int			count = 0;

	while ((s = *prev) != NULL)
	{
		if (s->indexoid == indexoid || ++count >= MAX_CACHED_STORES)
		{
			*prev = s->next;
			store_free(s);
			continue;
		}
		prev = &s->next;
	}
}

GateannStore *
gateann_store_lookup(Relation index, const GateannMetaPageData *meta)
{
	GateannStore **prev = &store_list;
	GateannStore *s;

	for (s = store_list; s != NULL; prev = &s->next, s = s->next)
	{
		if (store_matches(s, index, meta))
		{
			/* move to front: most recently used */
			*prev = s->next;
			s->next = store_list;
			store_list = s;
			return s;
		}
	}
	return NULL;
}

static void
load_codebook(Relation index, const GateannMetaPageData *meta, GateannStore *s)
{
	Size		total = gateann_pq_codebook_bytes(meta->dims);
	Size		done = 0;
	BlockNumber blkno;

	s->pq.dims = meta->dims;
	s->pq.m = meta->pq_subspaces;
	s->pq.centroids = MemoryContextAllocHuge(s->cxt, total);
	for (blkno = meta->codebook_start; done < total; blkno++)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		Page		page;
		Size		chunk = Min(total - done, (Size) GATEANN_PAGE_CAPACITY);

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!gateann_page_is_valid(page, GATEANN_PAGE_CODEBOOK))
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gateann index \"%s\": block %u is not a codebook page",
							RelationGetRelationName(index), blkno),
					 errhint("REINDEX the index.")));
		memcpy((char *) s->pq.centroids + done, PageGetContents(page), chunk);
		UnlockReleaseBuffer(buf);
		done += chunk;
	}
}

/* One sequential pass over the node pages, copying each record's PQ code. */
static void
load_codes(Relation index, const GateannMetaPageData *meta, GateannStore *s)
{
	BufferAccessStrategy bas = GetAccessStrategy(BAS_BULKREAD);
	uint32		id = 0;
	BlockNumber blkno;
	BlockNumber end = meta->node_start + meta->node_pages;
	Size		codebytes = (Size) meta->nnodes * meta->pq_subspaces;

	s->codes = MemoryContextAllocHuge(s->cxt, Max(codebytes, 1));
	for (blkno = meta->node_start; blkno < end && id < meta->nnodes; blkno++)
	{
		Buffer		buf;
		Page		page;

		CHECK_FOR_INTERRUPTS();
		/* with multi-page records only the first page holds the header */
		if (meta->records_per_page == 0 &&
			(blkno - meta->node_start) % meta->pages_per_record != 0)
			continue;
		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, bas);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!gateann_page_is_valid(page, GATEANN_PAGE_NODES))
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gateann index \"%s\": block %u is not a node page",
							RelationGetRelationName(index), blkno),
					 errhint("REINDEX the index.")));
		if (meta->records_per_page > 0)
		{
			uint32		slot;

			for (slot = 0; slot < meta->records_per_page && id < meta->nnodes; slot++, id++)
			{
				char	   *rec = PageGetContents(page) + slot * meta->record_size;

				memcpy(s->codes + (Size) id * meta->pq_subspaces,
					   GateannRecordPQCode(meta, rec), meta->pq_subspaces);
			}
		}
		else
		{
			/* the code sits at pqcode_offset, possibly on a later page */
			uint32		page_no = meta->pqcode_offset / GATEANN_PAGE_CAPACITY;
			uint32		off = meta->pqcode_offset % GATEANN_PAGE_CAPACITY;
			uint32		copied = 0;

			while (copied < (uint32) meta->pq_subspaces)
			{
				uint32		chunk = Min((uint32) meta->pq_subspaces - copied,
										(uint32) GATEANN_PAGE_CAPACITY - off);
				Buffer		cbuf = buf;

				if (page_no > 0)
				{
					cbuf = ReadBufferExtended(index, MAIN_FORKNUM, blkno + page_no,
											  RBM_NORMAL, bas);
					LockBuffer(cbuf, BUFFER_LOCK_SHARE);
				}
				memcpy(s->codes + (Size) id * meta->pq_subspaces + copied,
					   PageGetContents(BufferGetPage(cbuf)) + off, chunk);
				if (cbuf != buf)
					UnlockReleaseBuffer(cbuf);
				copied += chunk;
				off = 0;
				page_no++;
			}
			id++;
		}
		UnlockReleaseBuffer(buf);
	}
	FreeAccessStrategy(bas);
	if (id != meta->nnodes)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gateann index \"%s\" has %u node records, metapage says %u",
						RelationGetRelationName(index), id, meta->nnodes),
				 errhint("REINDEX the index.")));
}

GateannStore *
gateann_store_get(Relation index, const GateannMetaPageData *meta)
{
	GateannStore *s = gateann_store_lookup(index, meta);
	MemoryContext cxt;

	if (s != NULL)
		return s;

	store_evict(RelationGetRelid(index));

	cxt = AllocSetContextCreate(TopMemoryContext, "gateann store",
								ALLOCSET_DEFAULT_SIZES);
	s = MemoryContextAllocZero(cxt, sizeof(GateannStore));
	s->cxt = cxt;
	s->indexoid = RelationGetRelid(index);
	s->dboid = GATEANN_REL_DATABASE(index);
	s->spcoid = GATEANN_REL_TABLESPACE(index);
	s->relfilenumber = GATEANN_REL_FILENUMBER(index);
	s->build_id = meta->build_id;
	s->nnodes = meta->nnodes;
	s->pq_subspaces = meta->pq_subspaces;

	/* on error the context (a child of TopMemoryContext) must not leak */
	PG_TRY();
	{
		if (meta->nnodes > 0)
		{
			load_codebook(index, meta, s);
			load_codes(index, meta, s);
		}
	}
	PG_CATCH();
	{
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();

	s->pq_bytes = (meta->nnodes > 0 ? gateann_pq_codebook_bytes(meta->dims) : 0) +
		(Size) meta->nnodes * meta->pq_subspaces;
	s->next = store_list;
	store_list = s;
	return s;
}
