/*
 * vacuum.c — ambulkdelete / amvacuumcleanup.
 *
 * Bulk delete marks the records of dead heap tuples deleted (generic WAL,
 * one record per modified page): from then on scans never return them, but
 * they keep their place in the graph and still route searches.  Repairing
 * their in-neighbors and reusing their slots (FreshDiskANN consolidation)
 * comes with inserts in the writes issue.
 */
#include "postgres.h"

#include "gateann.h"
#include "page.h"
#include "store.h"

#include "access/generic_xlog.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

static void
add_deleted_to_meta(Relation index, uint32 ndeleted)
{
	Buffer		buf;
	GenericXLogState *state;
	Page		page;
	GateannMetaPageData *meta;

	buf = ReadBuffer(index, GATEANN_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(state, buf, 0);
	meta = (GateannMetaPageData *) PageGetContents(page);
	meta->ndeleted += ndeleted;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
}

IndexBulkDeleteResult *
gateann_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				   IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	GateannMetaPageData meta;
	BlockNumber blkno;
	BlockNumber end;
	uint32		id = 0;
	uint32		newly_deleted = 0;
	double		live = 0;

	GateannStore *store = NULL;
	bool		shared;
	Size		bytes;

	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));

	gateann_read_meta(index, &meta);
	/* scans skip deleted nodes' reads: tell a loaded store (never load one) */
	if (gateann_store_loaded(index, &meta, &shared, &bytes))
		store = gateann_store_get(index, &meta);
	end = meta.node_start + meta.node_pages;
	for (blkno = meta.node_start; blkno < end && id < meta.nnodes; blkno++)
	{
		Buffer		buf;
		Page		page;
		GenericXLogState *state = NULL;
		uint32		nrec;
		uint32		slot;

		gateann_vacuum_delay_point();
		if (meta.records_per_page == 0 &&
			(blkno - meta.node_start) % meta.pages_per_record != 0)
			continue;

		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, info->strategy);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		page = BufferGetPage(buf);
		nrec = meta.records_per_page > 0 ? meta.records_per_page : 1;
		for (slot = 0; slot < nrec && id < meta.nnodes; slot++, id++)
		{
			GateannNodeHeader *hdr = (GateannNodeHeader *)
				(PageGetContents(page) + slot * meta.record_size);

			if (hdr->flags & GATEANN_NODE_DELETED)
				continue;
			if (callback(&hdr->heap_tid, callback_state))
			{
				if (state == NULL)
				{
					state = GenericXLogStart(index);
					page = GenericXLogRegisterBuffer(state, buf, 0);
					hdr = (GateannNodeHeader *)
						(PageGetContents(page) + slot * meta.record_size);
				}
				hdr->flags |= GATEANN_NODE_DELETED;
				if (store != NULL)
					gateann_store_set_deleted(store, id);
				newly_deleted++;
				stats->tuples_removed += 1;
			}
			else
				live += 1;
		}
		if (state != NULL)
			GenericXLogFinish(state);
		UnlockReleaseBuffer(buf);
	}

	if (newly_deleted > 0)
	{
		add_deleted_to_meta(index, newly_deleted);

		/*
		 * Scans read node pages from the file, bypassing shared buffers:
		 * write the deleted flags out before VACUUM goes on to free the
		 * heap TIDs, so no scan can return a TID that gets reused.
		 */
		FlushRelationBuffers(index);
	}

	stats->num_pages = RelationGetNumberOfBlocks(index);
	stats->num_index_tuples = live;
	stats->estimated_count = false;
	return stats;
}

IndexBulkDeleteResult *
gateann_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	GateannMetaPageData meta;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
	{
		stats = palloc0(sizeof(IndexBulkDeleteResult));
		gateann_read_meta(info->index, &meta);
		stats->num_index_tuples = meta.nnodes - meta.ndeleted;
		stats->estimated_count = false;
	}
	stats->num_pages = RelationGetNumberOfBlocks(info->index);
	return stats;
}
