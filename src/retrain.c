/*
 * retrain.c — setting up an index built on no rows at its first insert, and
 * retraining the PQ codebook of an index that outgrew the rows it was
 * trained on.  See retrain.h for when and why; this file is the how.
 *
 * Both only write pages of the index (generic WAL, or full page images for
 * new pages), never the in-memory stores: they publish a new build id last,
 * and every store is keyed by it, so the next user loads stores made from
 * the new pages while running scans finish on the stores they hold.
 *
 * A crash (or an error) half way leaves codes of both codebooks on the
 * pages and the metapage still asking for a retrain: searches stay correct
 * (codes only steer them; results are ranked on exact vectors) and the next
 * insert or VACUUM retrains again.
 */
#include "postgres.h"

#include "filter.h"
#include "meta.h"
#include "page.h"
#include "pq.h"
#include "retrain.h"

#include "access/generic_xlog.h"
#include "access/xloginsert.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

/* Retraining starts at this many live nodes and multiplies by 4 each time */
#define RETRAIN_FIRST	64
#define RETRAIN_FACTOR	4

uint32
gateann_pq_next_retrain(uint32 trained)
{
	uint64		next;

	if (trained >= GATEANN_PQ_TRAIN_SAMPLE)
		return 0;
	next = Max((uint64) trained * RETRAIN_FACTOR, (uint64) RETRAIN_FIRST);
	return (uint32) Min(next, (uint64) GATEANN_PQ_TRAIN_SAMPLE);
}

/*
 * A codebook trained on n sample vectors (palloc'd; the sample is
 * overwritten, see gateann_pq_train).
 */
static float *
train_codebook(float *sample, int n, int dims, int m)
{
	GateannPQ	pq;
	void	   *scratch;

	gateann_pq_attach(&pq, dims, m,
					  palloc_extended(gateann_pq_codebook_bytes(dims),
									  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO));
	scratch = palloc_extended(gateann_pq_train_scratch_bytes(n, dims, m), MCXT_ALLOC_HUGE);
	gateann_pq_train(&pq, sample, n, GATEANN_PQ_SEED, GATEANN_PQ_TRAIN_ITERATIONS,
					 scratch, gateann_check_interrupts);
	pfree(scratch);
	return pq.centroids;
}

BlockNumber
gateann_dict_reserve_pages(const GateannMetaPageData *meta)
{
	Size		bytes = gateann_filter_dictionaries_max_bytes(meta);

	return (BlockNumber) ((bytes + GATEANN_PAGE_CAPACITY - 1) / GATEANN_PAGE_CAPACITY);
}

/*
 * The tail records of an index that has seen no vector yet (laid out for no
 * dimensions), copied into a new node region laid out by *meta from block
 * blkno on as node ids 0, 1, ...; deleted and free ones are left behind.
 * Sets meta->nnodes and node_pages.
 */
static void
carry_tail_records(Relation index, const GateannMetaPageData *old, GateannMetaPageData *meta,
				   BlockNumber blkno)
{
	char	   *rec = palloc(old->record_size);
	char	   *out = palloc(meta->record_size);
	GateannNodeWriter w;
	uint32		id;
	uint32		n = 0;
	int			i;

	gateann_node_writer_start(&w, index, MAIN_FORKNUM, meta, blkno, true);
	for (id = 0; id < old->nnodes; id++)
	{
		GateannNodeHeader *hdr = GateannRecordHeader(rec);
		GateannNodeHeader *ohdr = GateannRecordHeader(out);

		CHECK_FOR_INTERRUPTS();
		gateann_read_record(index, old, id, rec, NULL);
		if (hdr->node_id != id || !(hdr->flags & GATEANN_NODE_TAIL) ||
			(hdr->flags & (GATEANN_NODE_DELETED | GATEANN_NODE_FREE)))
			continue;
		memset(out, 0, meta->record_size);
		ohdr->node_id = n;
		ohdr->version = 1;
		ohdr->heap_tid = hdr->heap_tid;
		ohdr->flags = hdr->flags & GATEANN_NODE_TAIL;
		for (i = 0; i < meta->max_neighbors; i++)
			GateannRecordNeighbors(meta, out)[i] = InvalidNodeId;
		/* (the filter area's layout follows from the columns alone) */
		memcpy(GateannRecordFilter(meta, out), GateannRecordFilter(old, rec), meta->filter_size);
		gateann_record_seal(meta, out);
		gateann_node_writer_add(&w, out);
		n++;
	}
	meta->node_pages = gateann_node_writer_finish(&w) - blkno;
	meta->nnodes = n;
	pfree(rec);
	pfree(out);
}

/*
 * First vector inserted into an index that has seen none (the caller holds
 * the exclusive lock and has read *meta under it): records laid out for
 * `dims`, a codebook trained on the one vector there is, the filter
 * dictionaries of no rows, appended after whatever pages the index has,
 * with the tail records it holds (rows with NULL vectors) copied into the
 * new layout; then the metapage, with a new build id.  Scans of the old
 * build read the old pages, which stay as they are.
 */
static void
bootstrap(Relation index, GateannMetaPageData *meta, const float *vector, int dims)
{
	GateannMetaPageData old = *meta;
	GateannOptions *opts = gateann_get_options(index);
	GateannFilterLayout *filters = gateann_filter_layout_create(index);
	int			m = gateann_pq_subspaces(index, opts, dims);
	float	   *centroids;
	char	   *dict;
	BlockNumber blkno,
				half;
	GateannMetaUpdate u;

	meta->dims = dims;
	meta->pq_subspaces = m;
	gateann_filter_build_dictionaries(index, meta, filters, NULL, 0, &dict);
	gateann_layout_records(meta);
	{
		float	   *copy = palloc(sizeof(float) * dims);

		memcpy(copy, vector, sizeof(float) * dims);
		centroids = train_codebook(copy, 1, dims, m);
	}

	blkno = RelationGetNumberOfBlocks(index);
	meta->codebook_start = blkno;
	blkno = gateann_write_chunked(index, MAIN_FORKNUM, GATEANN_PAGE_CODEBOOK,
								  (const char *) centroids, gateann_pq_codebook_bytes(dims),
								  blkno, true);
	meta->codebook_pages = blkno - meta->codebook_start;
	meta->dict_start = blkno;
	half = gateann_dict_reserve_pages(meta);
	if (half > 0)
	{
		/* both dictionary areas (retrain.h): this one first, then empty pages */
		char	   *area = palloc0((Size) 2 * half * GATEANN_PAGE_CAPACITY);

		Assert(meta->dict_bytes <= (Size) half * GATEANN_PAGE_CAPACITY);
		memcpy(area, dict, meta->dict_bytes);
		meta->dict_area_start = blkno;
		meta->dict_area_pages = 2 * half;
		blkno = gateann_write_chunked(index, MAIN_FORKNUM, GATEANN_PAGE_DICT, area,
									  (Size) 2 * half * GATEANN_PAGE_CAPACITY, blkno, true);
		meta->dict_pages = (meta->dict_bytes + GATEANN_PAGE_CAPACITY - 1) / GATEANN_PAGE_CAPACITY;
	}
	else
	{
		blkno = gateann_write_chunked(index, MAIN_FORKNUM, GATEANN_PAGE_DICT, dict,
									  meta->dict_bytes, blkno, true);
		meta->dict_pages = blkno - meta->dict_start;
	}
	meta->node_start = blkno;
	carry_tail_records(index, &old, meta, blkno);
	meta->ndeleted = meta->nfree = meta->free_cursor = 0;
	meta->entry_point = InvalidNodeId;
	meta->nentries = 0;
	meta->build_id = gateann_new_build_id(index);
	meta->pq_trained_rows = 1;
	meta->pq_retrain_at = gateann_pq_next_retrain(1);

	/* the metapage last: until it is written, the index is still empty */
	*gateann_meta_update_begin(index, &u, true) = *meta;
	gateann_page_set_used(u.page, sizeof(GateannMetaPageData));
	gateann_meta_update_finish(&u);

	ereport(DEBUG1,
			(errmsg_internal("gateann index \"%s\": set up for %d dimensions by its first row",
							 RelationGetRelationName(index), dims)));
}

/* Have enough inserted rows been coded poorly (retrain.h)? */
static bool
codes_drifted(const GateannMetaPageData *meta)
{
	return meta->pq_poor >= Max(64, meta->pq_trained_rows / 32) &&
		(uint64) meta->pq_poor * 4 >= meta->pq_coded;
}

LOCKMODE
gateann_insert_lock(Relation index, GateannMetaPageData *meta,
					const float *vector, int dims)
{
	gateann_read_meta(index, meta);
	if (meta->dims == 0)
	{
		/* (a tail record goes into the index as it is: it only keeps a set-up out) */
		LOCKMODE	mode = vector != NULL ? ExclusiveLock : ShareLock;

		LockPage(index, GATEANN_METAPAGE_BLKNO, mode);
		gateann_read_meta(index, meta);
		if (meta->dims == 0 && vector != NULL)
			bootstrap(index, meta, vector, dims);
		return mode;
	}
	if (meta->pq_retrain_at == 0 && !codes_drifted(meta))
		return NoLock;			/* final codebook: it changes only if inserts drift */
	LockPage(index, GATEANN_METAPAGE_BLKNO, ShareLock);
	gateann_read_meta(index, meta);
	return ShareLock;
}

void
gateann_insert_unlock(Relation index, LOCKMODE mode)
{
	if (mode != NoLock)
		UnlockPage(index, GATEANN_METAPAGE_BLKNO, mode);
}

static bool
retrain_due(const GateannMetaPageData *meta, bool by_vacuum)
{
	if (meta->dims == 0 || meta->nnodes == 0)
		return false;
	if (meta->pq_retrain_at != 0 && GATEANN_LIVE_NODES(meta) >= (int64) meta->pq_retrain_at)
		return true;
	return codes_drifted(meta) &&
		(by_vacuum || GATEANN_LIVE_NODES(meta) <= GATEANN_RETRAIN_BY_INSERT_MAX);
}

/*
 * Up to `cap` vectors of live nodes, chosen uniformly (reservoir sampling,
 * seeded: the same index gives the same sample), read through shared
 * buffers.  Returns how many.
 */
static int
collect_sample(Relation index, const GateannMetaPageData *meta, float *sample,
			   uint8 *areas, int cap)
{
	char	   *rec = palloc(meta->record_size);
	uint64		rng = GATEANN_PQ_SEED;
	uint64		seen = 0;
	uint32		id;

	for (id = 0; id < meta->nnodes; id++)
	{
		GateannNodeHeader *hdr;
		uint64		slot;

		if ((id & 255) == 0)
			CHECK_FOR_INTERRUPTS();
		gateann_read_record(index, meta, id, rec, NULL);
		hdr = GateannRecordHeader(rec);
		if (hdr->node_id != id ||
			(hdr->flags & (GATEANN_NODE_DELETED | GATEANN_NODE_FREE | GATEANN_NODE_TAIL)))
			continue;
		slot = seen < (uint64) cap ? seen : gateann_random_next(&rng) % (seen + 1);
		seen++;
		if (slot < (uint64) cap)
		{
			gateann_record_copy_vector(meta, rec, sample + slot * meta->dims);
			if (areas != NULL)
				memcpy(areas + slot * meta->filter_size, GateannRecordFilter(meta, rec),
					   meta->filter_size);
		}
	}
	pfree(rec);
	return (int) Min(seen, (uint64) cap);
}

/*
 * Write len bytes at record offset `from` of node id's record (at most two
 * pages: a code is shorter than a page), under one generic WAL record.
 */
static void
write_record_bytes(Relation index, const GateannMetaPageData *meta, uint32 id,
				   uint32 from, const char *data, uint32 len)
{
	GateannRecordLoc loc = gateann_record_location(meta, id);
	uint32		first = (loc.offset + from) / GATEANN_PAGE_CAPACITY;
	uint32		last = (loc.offset + from + len - 1) / GATEANN_PAGE_CAPACITY;
	Buffer		bufs[2];
	GenericXLogState *state;
	uint32		k,
				done = 0;

	Assert(last - first < 2);
	for (k = first; k <= last; k++)
	{
		bufs[k - first] = ReadBuffer(index, loc.block + k);
		LockBuffer(bufs[k - first], BUFFER_LOCK_EXCLUSIVE);
	}
	state = GenericXLogStart(index);
	for (k = first; k <= last; k++)
	{
		Page		page = GenericXLogRegisterBuffer(state, bufs[k - first], 0);
		uint32		at = (k == first) ? (loc.offset + from) % GATEANN_PAGE_CAPACITY : 0;
		uint32		chunk = Min(len - done, (uint32) GATEANN_PAGE_CAPACITY - at);

		memcpy(PageGetContents(page) + at, data + done, chunk);
		done += chunk;
	}
	GenericXLogFinish(state);
	for (k = first; k <= last; k++)
		UnlockReleaseBuffer(bufs[k - first]);
}

/* Per coarse group, the live node nearest its centroid so far */
typedef struct GroupMedoids
{
	uint32		id[GATEANN_PQ_CENTROIDS];
	float		dist[GATEANN_PQ_CENTROIDS];
} GroupMedoids;

static inline void
note_medoid(GroupMedoids *gm, const uint8 *code, int m, uint32 id, float dist)
{
	int			g = gateann_pq_code_group(code, m);

	if (gm->id[g] == InvalidNodeId || dist < gm->dist[g])
	{
		gm->id[g] = id;
		gm->dist[g] = dist;
	}
}

/*
 * Re-encode every node that is not a free slot or a tail record (deleted
 * nodes still route searches, by their codes) with pq, noting in gm the live node of each
 * coarse group nearest its centroid (the new entry points).  Returns how
 * many.
 */
static uint32
reencode(Relation index, const GateannMetaPageData *meta, const GateannPQ *pq,
		 GroupMedoids *gm)
{
	Size		cb = gateann_pq_code_bytes(meta->pq_subspaces);
	uint8	   *code = palloc(cb);
	float	   *work = palloc(sizeof(float) * meta->dims);
	float	   *vecbuf = palloc(sizeof(float) * meta->dims);
	uint32		done = 0;
	int			g;

	for (g = 0; g < GATEANN_PQ_CENTROIDS; g++)
		gm->id[g] = InvalidNodeId;

	if (meta->records_per_page > 0)
	{
		BlockNumber blkno;

		/* a page at a time, all its records under one WAL record */
		for (blkno = meta->node_start; blkno < meta->node_start + meta->node_pages; blkno++)
		{
			Buffer		buf = ReadBuffer(index, blkno);
			GenericXLogState *state;
			Page		page;
			uint32		first = (blkno - meta->node_start) * meta->records_per_page;
			uint32		s;

			CHECK_FOR_INTERRUPTS();
			LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
			if (!gateann_page_is_valid(BufferGetPage(buf), GATEANN_PAGE_NODES))
			{
				UnlockReleaseBuffer(buf);
				continue;
			}
			state = GenericXLogStart(index);
			page = GenericXLogRegisterBuffer(state, buf, 0);
			for (s = 0; s < meta->records_per_page && first + s < meta->nnodes; s++)
			{
				char	   *rec = PageGetContents(page) + (Size) s * meta->record_size;
				GateannNodeHeader *hdr = GateannRecordHeader(rec);

				float		d;

				/* (a tail record has no vector to code: it is never read for one) */
				if (hdr->node_id != first + s ||
					(hdr->flags & (GATEANN_NODE_FREE | GATEANN_NODE_TAIL)))
					continue;
				(void) gateann_pq_encode(pq, gateann_record_vector(meta, rec, vecbuf),
										 GateannRecordPQCode(meta, rec), work, &d);
				if (!(hdr->flags & GATEANN_NODE_DELETED))
					note_medoid(gm, GateannRecordPQCode(meta, rec), meta->pq_subspaces,
								first + s, d);
				done++;
			}
			GenericXLogFinish(state);
			UnlockReleaseBuffer(buf);
		}
	}
	else
	{
		char	   *rec = palloc(meta->record_size);
		uint32		id;

		for (id = 0; id < meta->nnodes; id++)
		{
			GateannNodeHeader *hdr;
			float		d;

			CHECK_FOR_INTERRUPTS();
			gateann_read_record(index, meta, id, rec, NULL);
			hdr = GateannRecordHeader(rec);
			if (hdr->node_id != id || (hdr->flags & (GATEANN_NODE_FREE | GATEANN_NODE_TAIL)))
				continue;
			(void) gateann_pq_encode(pq, gateann_record_vector(meta, rec, vecbuf), code, work,
									 &d);
			if (!(hdr->flags & GATEANN_NODE_DELETED))
				note_medoid(gm, code, meta->pq_subspaces, id, d);
			write_record_bytes(index, meta, id, meta->pqcode_offset, (const char *) code,
							   cb);
			done++;
		}
		pfree(rec);
	}
	pfree(code);
	pfree(work);
	pfree(vecbuf);
	return done;
}

/*
 * New filter dictionaries from the retraining sample's filter areas, into
 * the half of the dictionary area the metapage does not point to (loaders
 * may be reading the other); *newmeta gets the fields to publish.  False
 * when they do not fit there (the old ones stay).
 */
static bool
write_dictionaries(Relation index, const GateannMetaPageData *meta, const uint8 *areas,
				   int nsample, GateannMetaPageData *newmeta)
{
	BlockNumber half = meta->dict_area_pages / 2;
	BlockNumber target = (meta->dict_start == meta->dict_area_start) ?
		meta->dict_area_start + half : meta->dict_area_start;
	char	   *dict;

	*newmeta = *meta;
	gateann_filter_dictionaries_from_records(index, newmeta, areas, (uint32) nsample, &dict);
	if (newmeta->dict_bytes > (Size) half * GATEANN_PAGE_CAPACITY)
		return false;
	newmeta->dict_start = target;
	newmeta->dict_pages = gateann_write_chunked(index, MAIN_FORKNUM, GATEANN_PAGE_DICT,
												dict, newmeta->dict_bytes, target,
												true) - target;
	return true;
}

/*
 * The metapage after a retraining: a new build id (stores reload), the
 * codebook's fields, the new groups' medoids as entry points, and the new
 * dictionaries (dictmeta, unless NULL).  Only these fields: VACUUM may be
 * changing the others meanwhile.
 */
static void
publish_retrain(Relation index, const GateannPQ *pq, const GroupMedoids *gm, int nsample,
				uint32 next, const GateannMetaPageData *dictmeta)
{
	GateannMetaUpdate u;
	GateannMetaPageData *disk;

	disk = gateann_meta_update_begin(index, &u, false);
	disk->build_id = gateann_new_build_id(index);
	disk->pq_trained_rows = (uint32) nsample;
	disk->pq_retrain_at = next;
	disk->pq_spacing = gateann_pq_coarse_spacing(pq);
	disk->pq_coded = disk->pq_poor = 0;
	/*
	 * The new groups' medoids join the entry points while there is room
	 * (an index grown from no rows gets its first ones so).  None is taken
	 * away: every live node is reachable from the entry points as they are
	 * (inserts keep it so), and fewer could strand some.
	 */
	if (disk->entry_point != InvalidNodeId)
	{
		int			g;

		(void) gateann_meta_add_entry(disk, disk->entry_point);	/* entries[0] */
		for (g = 0; g < GATEANN_PQ_CENTROIDS && disk->nentries < GATEANN_MAX_ENTRIES; g++)
			if (gm->id[g] != InvalidNodeId)
				(void) gateann_meta_add_entry(disk, gm->id[g]);
	}
	if (dictmeta != NULL)
	{
		memcpy(disk->filter, dictmeta->filter, sizeof(disk->filter));
		disk->dict_start = dictmeta->dict_start;
		disk->dict_pages = dictmeta->dict_pages;
		disk->dict_bytes = dictmeta->dict_bytes;
		disk->dict_generation++;
	}
	gateann_meta_update_finish(&u);
}

bool
gateann_retrain_if_due(Relation index, bool by_vacuum)
{
	GateannMetaPageData meta;
	MemoryContext cxt,
				oldcxt;
	GateannMetaPageData newmeta;
	GateannPQ	pq;
	GroupMedoids gm;
	float	   *sample;
	uint8	   *areas = NULL;
	bool		new_dict = false;
	Size		limit = (Size) maintenance_work_mem * 1024;
	int64		live;
	int			cap,
				want,
				nsample;
	uint32		next,
				reencoded;

	gateann_read_meta(index, &meta);
	if (!retrain_due(&meta, by_vacuum))
		return false;
	LockPage(index, GATEANN_METAPAGE_BLKNO, ExclusiveLock);
	gateann_read_meta(index, &meta);
	if (!retrain_due(&meta, by_vacuum))
	{
		UnlockPage(index, GATEANN_METAPAGE_BLKNO, ExclusiveLock);
		return false;			/* someone else did it meanwhile */
	}

	cxt = AllocSetContextCreate(CurrentMemoryContext, "gateann retrain",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);

	/* the sample a build would take, as far as maintenance_work_mem allows */
	live = GATEANN_LIVE_NODES(&meta);
	want = (int) Min(live, (int64) GATEANN_PQ_TRAIN_SAMPLE);
	cap = want;
	while (cap > GATEANN_PQ_CENTROIDS &&
		   (Size) cap * (meta.dims * sizeof(float) +
						 (meta.dict_area_pages > 0 ? meta.filter_size : 0)) +
		   gateann_pq_train_scratch_bytes(cap, meta.dims, meta.pq_subspaces) > limit)
		cap /= 2;
	sample = palloc_extended((Size) cap * meta.dims * sizeof(float), MCXT_ALLOC_HUGE);
	if (meta.dict_area_pages > 0)
		areas = palloc_extended((Size) cap * meta.filter_size, MCXT_ALLOC_HUGE);
	nsample = collect_sample(index, &meta, sample, areas, cap);

	gateann_pq_attach(&pq, meta.dims, meta.pq_subspaces,
					  train_codebook(sample, nsample, meta.dims, meta.pq_subspaces));
	pfree(sample);

	if (gateann_write_chunked(index, MAIN_FORKNUM, GATEANN_PAGE_CODEBOOK,
							  (const char *) pq.centroids, gateann_pq_codebook_bytes(meta.dims),
							  meta.codebook_start, true) !=
		meta.codebook_start + meta.codebook_pages)
		elog(ERROR, "gateann: codebook of index \"%s\" changed size",
			 RelationGetRelationName(index));
	reencoded = reencode(index, &meta, &pq, &gm);

	if (areas != NULL)
		new_dict = write_dictionaries(index, &meta, areas, nsample, &newmeta);

	/*
	 * Next time at 4x as many rows; never again once the sample is as large
	 * as a build's, or as large as memory allows.
	 */
	next = (cap < want) ? 0 : gateann_pq_next_retrain((uint32) nsample);
	if (next != 0 && (int64) next <= live)
		next = gateann_pq_next_retrain((uint32) Min(live, (int64) GATEANN_PQ_TRAIN_SAMPLE));

	publish_retrain(index, &pq, &gm, nsample, next, new_dict ? &newmeta : NULL);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	UnlockPage(index, GATEANN_METAPAGE_BLKNO, ExclusiveLock);

	ereport(DEBUG1,
			(errmsg_internal("gateann index \"%s\": quantizer retrained on %d of %lld live vectors, %u nodes re-encoded, next retrain at %u",
							 RelationGetRelationName(index), nsample, (long long) live,
							 reencoded, next)));
	return true;
}
