/*
 * build.c — CREATE INDEX for gateann.
 *
 * 1. Scan the heap, collecting every non-NULL vector (validated, normalised
 *    for cosine), its heap TID and a serialised copy of its filter columns,
 *    all accounted against maintenance_work_mem; rows whose vector has no
 *    distance (NULL, or zero under cosine) are kept apart, with their heap
 *    TID and filter columns: they become tail records (gateann.h).
 * 2. Train the PQ codebook on a deterministic sample; renumber the nodes
 *    cluster by cluster (order.c), so that a search finds what it touches
 *    in the in-memory stores close together; encode every vector.
 * 3. Build the Vamana graph in memory (graph.c).
 * When the vectors and the graph do not fit in maintenance_work_mem, the
 * scan spills the vectors to a temporary file, and steps 2-3 become a
 * build in partitions (build_merge.h): heap order, no locality order.
 * 4. Write metapage, codebook pages and node pages through the buffer
 *    manager, then WAL-log them all as full page images (log_newpage_range),
 *    so a crash after commit leaves a usable index and standbys receive it.
 */
#include "postgres.h"

#include <math.h>

#include "build_merge.h"
#include "distance.h"
#include "filter.h"
#include "graph.h"
#include "meta.h"
#include "order.h"
#include "parallel.h"
#include "page.h"
#include "pq.h"
#include "retrain.h"
#include "store.h"
#include "vector.h"

#include "access/tableam.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "commands/progress.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "portability/instr_time.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

typedef struct BuildState
{
	Relation	index;
	const char *heapname;
	GateannVectorReader reader;
	GateannMetric metric;
	GateannFilterLayout *filters;

	int			dims;			/* 0 until the first vector */
	uint32		n;
	uint32		capacity;		/* allocated slots */
	float	   *vectors;		/* capacity * dims */
	ItemPointerData *tids;
	GateannFilterArena arena;	/* serialised filter values per node */
	uint32	   *arena_id;		/* node id -> its arena entry (heap scan
								 * order); NULL: the same */
	int			max_neighbors;
	int			pq_option;		/* pq_subspaces reloption (0 = automatic) */
	int			pq_m;			/* subspaces, once dims is known */
	bool		locality_order; /* renumber the nodes (order.c) */
	bool		half;			/* record_precision = half */
	double		record_error;	/* half: the largest |v - half(v)| */

	/* tail rows: their heap TIDs, tail flags and filter values */
	uint32		ntail;
	uint32		tail_capacity;
	ItemPointerData *tail_tids;
	uint16	   *tail_flags;
	GateannFilterArena tail_arena;

	Size		per_node_graph_bytes;	/* estimate, for the memory check */
	Size		memory_limit;
	double		reltuples;		/* heap tuples seen, incl. not indexed */
	/*
	 * Over maintenance_work_mem: the scan goes on counting the rows it no
	 * longer keeps, so that the error can say what the whole table needs.
	 */
	bool		over_budget;
	uint32		n_unkept;

	/* the vectors left memory: a build in partitions (build_merge.h) */
	GateannSpill *spill;
	bool		parallel;		/* the planner chose workers */
	MemoryContext tmpcxt;
} BuildState;

/*
 * Memory a build of n vectors needs, the filter and tail rows seen so far
 * counted `scale` times.
 */
static Size
memory_need(const BuildState *bs, uint32 n, double scale)
{
	Size		need;
	int			nsample = (int) Min(n, (uint32) GATEANN_PQ_TRAIN_SAMPLE);

	need = (Size) n * (sizeof(float) * bs->dims + sizeof(ItemPointerData) +
					   bs->per_node_graph_bytes);
	need += (Size) (scale * (gateann_filter_arena_bytes(&bs->arena) +
							 (Size) bs->ntail * (sizeof(ItemPointerData) + sizeof(uint16)) +
							 gateann_filter_arena_bytes(&bs->tail_arena)));
	/* codebook, training sample and k-means scratch, PQ codes */
	need += gateann_pq_codebook_bytes(bs->dims);
	need += (Size) nsample * sizeof(float) * bs->dims;
	need += gateann_pq_train_scratch_bytes(nsample, bs->dims, bs->pq_m);
	need += (Size) n * gateann_pq_code_bytes(bs->pq_m);
	/*
	 * locality order: the node -> arena entry map, and the clustering
	 * scratch or, later, pack_pages' two maps (never both at once)
	 */
	if (bs->locality_order && n >= GATEANN_ORDER_MIN_NODES)
		need += (Size) n * sizeof(uint32) +
			Max(gateann_locality_order_scratch_bytes(n, bs->dims),
				(Size) n * 2 * sizeof(uint32) + (n + 7) / 8);
	return need;
}

/* A temporary file open: its buffer, its struct and virtual descriptor */
#define TEMP_FILE_BYTES		(BLCKSZ + 512)

/*
 * Memory a build in partitions of n vectors needs besides its partitions:
 * per node its heap TID, its partitions, places and new id
 * (GATEANN_MERGE_NODE_BYTES), the filter and tail rows (counted `scale`
 * times), the codebook, the training sample and its scratch, and each
 * temporary file's buffer (nfiles of them).
 */
static Size
spill_resident(const BuildState *bs, uint32 n, double scale, int sample_rows, int nfiles)
{
	Size		need;

	need = (Size) n * (sizeof(ItemPointerData) + GATEANN_MERGE_NODE_BYTES);
	need += (Size) (scale * (gateann_filter_arena_bytes(&bs->arena) +
							 (Size) bs->ntail * (sizeof(ItemPointerData) + sizeof(uint16)) +
							 gateann_filter_arena_bytes(&bs->tail_arena)));
	need += gateann_pq_codebook_bytes(bs->dims);
	need += gateann_spill_sample_bytes(sample_rows, bs->dims, bs->pq_m);
	need += (Size) nfiles * TEMP_FILE_BYTES;
	return need;
}

/* The rows a build in partitions trains on: what a quarter of the budget holds */
static int
spill_sample_rows(const BuildState *bs)
{
	int			rows = GATEANN_PQ_TRAIN_SAMPLE;

	while (rows > 256 &&
		   gateann_spill_sample_bytes(rows, bs->dims, bs->pq_m) > bs->memory_limit / 4)
		rows /= 2;
	return rows;
}

/* Members a partition may have within the budget (0: not even one) */
static uint32
partition_capacity(const BuildState *bs, uint32 n)
{
	Size		member = gateann_merge_member_bytes(bs->dims, bs->max_neighbors, bs->parallel);
	Size		resident = spill_resident(bs, n, 1.0, 0, 2);
	Size		cap;
	Size		nparts;

	if (resident >= bs->memory_limit)
		return 0;
	cap = (bs->memory_limit - resident) / member;
	/* each partition holds two temporary files */
	nparts = 2 * (Size) n / Max(cap, 1) + 2;
	resident += nparts * 2 * TEMP_FILE_BYTES;
	if (resident >= bs->memory_limit)
		return 0;
	cap = (bs->memory_limit - resident) / member;
	return (uint32) Min(cap, (Size) GATEANN_MAX_NODES);
}

/*
 * Memory a build in partitions of n vectors needs at the least: one
 * partition of GATEANN_MERGE_MIN_PARTITION, and while scanning the sample.
 */
static Size
spill_need(const BuildState *bs, uint32 n, double scale)
{
	Size		member = gateann_merge_member_bytes(bs->dims, bs->max_neighbors, bs->parallel);
	Size		nparts = 2 * (Size) n / GATEANN_MERGE_MIN_PARTITION + 2;

	int			sample_rows = bs->spill ? bs->spill->sample_cap : spill_sample_rows(bs);

	return Max(spill_resident(bs, n, scale, 0, 2 + 2 * nparts) +
			   GATEANN_MERGE_MIN_PARTITION * member,
			   spill_resident(bs, n, scale, sample_rows, 2));
}

/*
 * The error of a build over maintenance_work_mem, with what n vectors (and
 * the filter and tail rows kept so far, counted `scale` times) need.
 */
static void
report_memory(const BuildState *bs, uint32 n, double scale)
{
	Size		in_memory = (Size) (memory_need(bs, n, scale) * 1.1) / (1024 * 1024) + 1;
	Size		in_parts = (Size) (spill_need(bs, n, scale) * 1.1) / (1024 * 1024) + 1;

	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg_plural("gateann index build needs more than maintenance_work_mem (%zu kB) for %u vector of %d dimensions",
						   "gateann index build needs more than maintenance_work_mem (%zu kB) for %u vectors of %d dimensions",
						   n, bs->memory_limit / 1024, n, bs->dims),
			 in_parts < in_memory ?
			 errhint("Increase maintenance_work_mem to at least %zu MB to build the index in partitions, or to %zu MB to build it in memory (faster), e.g. SET maintenance_work_mem = '%zuMB', and retry.",
					 in_parts, in_memory, in_memory) :
			 errhint("Increase maintenance_work_mem to at least %zu MB, e.g. SET maintenance_work_mem = '%zuMB', and retry.",
					 in_memory, in_memory)));
}

/*
 * Do n vectors fit?  During the heap scan a build that does not goes on
 * counting rows (over_budget): a hint from the rows seen so far was far too
 * low on a table without a row count, and each retry failed again.
 */
static bool
check_memory(BuildState *bs, uint32 n_needed)
{
	if (bs->spill == NULL ? memory_need(bs, n_needed, 1.0) <= bs->memory_limit :
		spill_need(bs, n_needed, 1.0) <= bs->memory_limit)
		return true;
	bs->over_budget = true;
	return false;
}

/*
 * The vectors no longer fit: go on with them in a temporary file (a build
 * in partitions), if the rest fits.
 */
static bool
start_spill(BuildState *bs)
{
	if (bs->spill != NULL || bs->dims == 0 ||
		spill_need(bs, bs->n + 1, 1.0) > bs->memory_limit)
		return false;
	ereport(NOTICE,
			(errmsg("gateann index \"%s\" does not fit in maintenance_work_mem after %u rows: building it in partitions",
					RelationGetRelationName(bs->index), bs->n),
			 errdetail("The vectors go to temporary files and the graph is built part by part; the build takes longer."),
			 errhint("Increase maintenance_work_mem to build in memory.")));
	bs->spill = palloc(sizeof(GateannSpill));
	gateann_spill_begin(bs->spill, bs->vectors, bs->n, bs->dims, spill_sample_rows(bs));
	pfree(bs->vectors);
	bs->vectors = NULL;
	return true;
}

/* After the heap scan: the error for the whole table, if it did not fit */
static void
check_memory_after_scan(BuildState *bs)
{
	double		kept = Max((double) bs->n + bs->ntail, 1.0);
	uint32		n = bs->n + bs->n_unkept;

	if (bs->over_budget)
		report_memory(bs, n, (kept + bs->n_unkept) / kept);
	if (bs->spill == NULL && bs->n > 0 && memory_need(bs, bs->n, 1.0) > bs->memory_limit &&
		!start_spill(bs))
		report_memory(bs, bs->n, 1.0);
}

static void
grow_arrays(BuildState *bs)
{
	Size		per_row = sizeof(float) * bs->dims + sizeof(ItemPointerData) +
		bs->per_node_graph_bytes;
	uint32		newcap = bs->capacity == 0 ? 64 : bs->capacity * 2;

	if (bs->spill != NULL)
	{
		/* only the heap TIDs stay in memory (check_memory bounds them) */
		bs->tids = repalloc_huge(bs->tids, sizeof(ItemPointerData) * (Size) newcap);
		bs->capacity = newcap;
		return;
	}

	/* never allocate room for more rows than maintenance_work_mem can hold */
	newcap = (uint32) Min((Size) newcap, bs->memory_limit / per_row + 1);
	if (newcap <= bs->n)
		report_memory(bs, bs->n + 1, 1.0);

	if (bs->capacity == 0)
	{
		bs->vectors = palloc_extended(sizeof(float) * bs->dims * (Size) newcap, MCXT_ALLOC_HUGE);
		bs->tids = palloc_extended(sizeof(ItemPointerData) * (Size) newcap, MCXT_ALLOC_HUGE);
	}
	else
	{
		bs->vectors = repalloc_huge(bs->vectors, sizeof(float) * bs->dims * (Size) newcap);
		bs->tids = repalloc_huge(bs->tids, sizeof(ItemPointerData) * (Size) newcap);
	}
	bs->capacity = newcap;
}

/* Keep a row whose vector has no distance, for a tail record (flags) */
static void
add_tail_row(BuildState *bs, ItemPointer tid, Datum *values, bool *isnull, uint16 flags)
{
	if (bs->n + bs->ntail >= GATEANN_MAX_NODES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gateann indexes at most %u rows", GATEANN_MAX_NODES)));
	if (bs->ntail == bs->tail_capacity)
	{
		bs->tail_capacity = Max(64, bs->tail_capacity * 2);
		bs->tail_tids = bs->tail_tids == NULL ?
			palloc_extended(sizeof(ItemPointerData) * (Size) bs->tail_capacity, MCXT_ALLOC_HUGE) :
			repalloc_huge(bs->tail_tids, sizeof(ItemPointerData) * (Size) bs->tail_capacity);
		bs->tail_flags = bs->tail_flags == NULL ?
			palloc_extended(sizeof(uint16) * (Size) bs->tail_capacity, MCXT_ALLOC_HUGE) :
			repalloc_huge(bs->tail_flags, sizeof(uint16) * (Size) bs->tail_capacity);
	}
	bs->tail_tids[bs->ntail] = *tid;
	bs->tail_flags[bs->ntail] = flags;
	gateann_filter_arena_add(&bs->tail_arena, bs->filters, values + 1, isnull + 1);
	bs->ntail++;
	(void) check_memory(bs, bs->n);
}

/* The first vector's dimensions: what every node will cost */
static void
set_dimensions(BuildState *bs, int dims)
{
	bs->dims = dims;
	/*
	 * graph arrays, visit stamps and the 8-bit copy per node; the search
	 * scratch is fixed
	 */
	bs->per_node_graph_bytes = gateann_graph_array_bytes(1, bs->max_neighbors) +
		sizeof(uint32) + dims;
	bs->pq_m = Min(bs->pq_option > 0 ? bs->pq_option :
				   gateann_pq_default_subspaces(dims), dims);
}

static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	BuildState *bs = (BuildState *) state;
	MemoryContext oldcxt;
	float	   *v;
	int			dims;
	int			bad;

	bs->reltuples += 1;
	if (bs->over_budget)
	{
		bs->n_unkept++;			/* (rows without a distance too: an upper bound) */
		return;
	}
	if (isnull[0])
	{
		add_tail_row(bs, tid, values, isnull, GATEANN_NODE_NULL_VECTOR);
		return;
	}

	oldcxt = MemoryContextSwitchTo(bs->tmpcxt);
	v = gateann_vector_from_datum(&bs->reader, values[0], &dims);

	if (bs->dims == 0)
		set_dimensions(bs, dims);
	else if (dims != bs->dims && !tupleIsAlive)
	{
		/* a deleted row nobody new will see: not worth failing the build */
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(bs->tmpcxt);
		return;
	}
	else if (dims != bs->dims)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vector in row %s of \"%s\" has %d dimensions, but the index's first vector has %d",
						gateann_tid_string(tid), bs->heapname,
						dims, bs->dims),
				 errhint("All vectors in one gateann index must have the same number of dimensions; use a partial or expression index to separate them.")));

	bad = gateann_first_unindexable(v, dims, bs->metric);
	if (bad >= 0 && !tupleIsAlive)
	{
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(bs->tmpcxt);
		return;
	}
	if (bad >= 0)
		gateann_report_unindexable(psprintf("vector in row %s of \"%s\"",
											gateann_tid_string(tid), bs->heapname),
								   v, bad);

	/* Cosine: unit vectors; a zero vector has no direction: a tail record */
	if (bs->metric == GATEANN_METRIC_COSINE && !gateann_normalize(v, dims))
	{
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(bs->tmpcxt);
		add_tail_row(bs, tid, values, isnull, GATEANN_NODE_NO_DIRECTION);
		return;
	}

	/* records of halves: every value must have one; how far they are */
	if (bs->half)
	{
		double		err = gateann_half_error(v, dims);

		if (err < 0 && !tupleIsAlive)
		{
			MemoryContextSwitchTo(oldcxt);
			MemoryContextReset(bs->tmpcxt);
			return;
		}
		if (err < 0)
			gateann_report_half_range(bs->index,
									  psprintf("vector in row %s of \"%s\"",
											   gateann_tid_string(tid), bs->heapname),
									  v, dims);
		bs->record_error = Max(bs->record_error, err);
	}

	MemoryContextSwitchTo(oldcxt);

	if (bs->n + bs->ntail >= GATEANN_MAX_NODES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gateann indexes at most %u rows", GATEANN_MAX_NODES)));
	if (!check_memory(bs, bs->n + 1))
	{
		bs->over_budget = false;
		if (!start_spill(bs))
		{
			bs->over_budget = true;
			bs->n_unkept++;
			MemoryContextReset(bs->tmpcxt);
			return;
		}
	}
	if (bs->n == bs->capacity)
		grow_arrays(bs);

	if (bs->spill != NULL)
		gateann_spill_add(bs->spill, v);
	else
		memcpy(bs->vectors + (Size) bs->n * bs->dims, v, sizeof(float) * dims);
	bs->tids[bs->n] = *tid;
	gateann_filter_arena_add(&bs->arena, bs->filters, values + 1, isnull + 1);
	bs->n++;

	MemoryContextReset(bs->tmpcxt);
	if ((bs->n % 1024) == 0)
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, bs->n);
}

/* Build phase timings go to the server log at DEBUG1. */
static instr_time phase_start;
static int	phase_current = 0;

static void
report_phase(int phase, double total)
{
	const int	idx[] = {PROGRESS_CREATEIDX_SUBPHASE,
		PROGRESS_CREATEIDX_TUPLES_TOTAL,
	PROGRESS_CREATEIDX_TUPLES_DONE};
	const int64 val[] = {phase, (int64) total, 0};
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	if (phase_current != 0)
	{
		instr_time	elapsed = now;

		INSTR_TIME_SUBTRACT(elapsed, phase_start);
		elog(DEBUG1, "gateann build phase %d took %.3f s", phase_current,
			 INSTR_TIME_GET_DOUBLE(elapsed));
	}
	phase_start = now;
	phase_current = phase;
	if (phase == 0)
		return;

	pgstat_progress_update_multi_param(3, idx, val);
}

static void
graph_progress(int pass, uint32 done, uint32 total)
{
	static int	current_pass = 0;

	CHECK_FOR_INTERRUPTS();
	if (pass != current_pass || done == 0)
	{
		current_pass = pass;
		report_phase(pass == 1 ? GATEANN_PHASE_GRAPH_PASS1 :
					 pass == 2 ? GATEANN_PHASE_GRAPH_PASS2 : GATEANN_PHASE_GRAPH_PASS3,
					 total);
	}
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, done);
}

/*
 * Serialise node `id` into rec (meta->record_size bytes): its heap TID,
 * vector, PQ code and list (deg ids) as the graph's build left them, the
 * filter values of its arena entry.
 */
static void
fill_record(const GateannMetaPageData *meta, char *rec, uint32 id, const BuildState *bs,
			ItemPointer tid, uint32 arena_entry, const float *vector, const uint8 *code,
			const uint32 *list, int deg)
{
	GateannNodeHeader *hdr = GateannRecordHeader(rec);
	uint32	   *nbrs = GateannRecordNeighbors(meta, rec);
	int			i;

	memset(rec, 0, meta->record_size);
	hdr->node_id = id;
	hdr->version = 1;
	hdr->heap_tid = *tid;
	hdr->flags = 0;
	hdr->nneighbors = (uint16) deg;
	gateann_record_set_vector(meta, rec, vector);
	memcpy(nbrs, list, sizeof(uint32) * deg);
	for (i = deg; i < meta->max_neighbors; i++)
		nbrs[i] = InvalidNodeId;
	memcpy(GateannRecordPQCode(meta, rec), code, gateann_pq_code_bytes(meta->pq_subspaces));
	gateann_filter_write_record(meta, &bs->arena, arena_entry, GateannRecordFilter(meta, rec));
	gateann_record_seal(meta, rec);
}

/* Serialise tail row j (node id bs->n + j) into rec. */
static void
fill_tail_record(const GateannMetaPageData *meta, char *rec, uint32 j, const BuildState *bs)
{
	GateannNodeHeader *hdr = GateannRecordHeader(rec);
	uint32	   *nbrs = GateannRecordNeighbors(meta, rec);
	int			i;

	/* (a zero vector is all zeros, as a NULL one's area is) */
	memset(rec, 0, meta->record_size);
	hdr->node_id = bs->n + j;
	hdr->version = 1;
	hdr->heap_tid = bs->tail_tids[j];
	hdr->flags = bs->tail_flags[j];
	hdr->nneighbors = 0;
	for (i = 0; i < meta->max_neighbors; i++)
		nbrs[i] = InvalidNodeId;
	gateann_filter_write_record(meta, &bs->tail_arena, j, GateannRecordFilter(meta, rec));
	gateann_record_seal(meta, rec);
}

/*
 * Write the whole index: metapage, codebook, dictionaries, node records
 * (the graph's nodes, then the tail records).  The nodes come from codes
 * and graph, or from a build in partitions (merge not NULL).  No WAL: the
 * caller logs the relation whole.
 */
static void
write_index(Relation index, ForkNumber fork, GateannMetaPageData *meta,
			const BuildState *bs, const GateannPQ *pq, const uint8 *codes,
			const GateannGraph *graph, GateannMergeBuild *merge, const char *dict)
{
	PGAlignedBlock pagebuf;
	Page		page = pagebuf.data;
	BlockNumber blkno = 0;
	GateannNodeWriter w;
	char	   *rec;
	float	   *vector = NULL;
	uint8	   *code = NULL;
	uint32	   *list = NULL;
	uint32		id;

	/* metapage first; rewritten at the end once counts are final */
	gateann_init_page(page, GATEANN_PAGE_META);
	gateann_write_page(index, fork, blkno++, page, false);

	/* codebook */
	meta->codebook_start = blkno;
	if (bs->n > 0)
		blkno = gateann_write_chunked(index, fork, GATEANN_PAGE_CODEBOOK,
									  (const char *) pq->centroids,
									  gateann_pq_codebook_bytes(meta->dims), blkno, false);
	meta->codebook_pages = blkno - meta->codebook_start;

	/* filter-column dictionaries, from which loaders code the filter store */
	meta->dict_start = blkno;
	blkno = gateann_write_chunked(index, fork, GATEANN_PAGE_DICT, dict, meta->dict_bytes,
								  blkno, false);
	meta->dict_pages = blkno - meta->dict_start;
	if (meta->pq_retrain_at != 0)
	{
		/* retrained later, with new dictionaries: reserve their areas (retrain.h) */
		BlockNumber half = gateann_dict_reserve_pages(meta);

		if (half > 0 && meta->dict_pages <= half)
		{
			meta->dict_area_start = meta->dict_start;
			meta->dict_area_pages = 2 * half;
			gateann_init_page(page, GATEANN_PAGE_DICT);
			while (blkno < meta->dict_area_start + meta->dict_area_pages)
				gateann_write_page(index, fork, blkno++, page, false);
		}
	}

	/* node records */
	meta->node_start = blkno;
	rec = palloc0(meta->record_size);
	if (merge != NULL)
	{
		vector = palloc(sizeof(float) * meta->dims);
		code = palloc(gateann_pq_code_bytes(meta->pq_subspaces));
		list = palloc(sizeof(uint32) * meta->max_neighbors);
	}
	gateann_node_writer_start(&w, index, fork, meta, blkno, false);
	for (id = 0; id < meta->nnodes; id++)
	{
		if (id < bs->n && merge != NULL)
		{
			uint32		heap_order;
			int			deg;

			gateann_merge_next(merge, id, &heap_order, vector, code, list, &deg);
			/* (its TID and filter values are in heap order) */
			fill_record(meta, rec, id, bs, &bs->tids[heap_order], heap_order,
						vector, code, list, deg);
		}
		else if (id < bs->n)
			fill_record(meta, rec, id, bs, &bs->tids[id], bs->arena_id ? bs->arena_id[id] : id,
						bs->vectors + (Size) id * meta->dims,
						codes + (Size) id * gateann_pq_code_bytes(meta->pq_subspaces),
						graph->adj + (Size) id * graph->capacity, graph->degree[id]);
		else
			fill_tail_record(meta, rec, id - bs->n, bs);
		gateann_node_writer_add(&w, rec);
		if ((id & 1023) == 0)
		{
			CHECK_FOR_INTERRUPTS();
			pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, id);
		}
	}
	blkno = gateann_node_writer_finish(&w);
	pfree(rec);
	meta->node_pages = blkno - meta->node_start;

	/* final metapage */
	gateann_write_meta_page(index, fork, meta);
}

/* Rows of n nodes to their new ids (gateann_permute_rows), done cleared first */
static void
permute_node_rows(void *rows, Size row_bytes, uint32 n, const uint32 *order, uint8 *done,
				  char *tmp)
{
	memset(done, 0, ((Size) n + 7) / 8);
	gateann_permute_rows((char *) rows, row_bytes, n, order, done, tmp);
	CHECK_FOR_INTERRUPTS();
}

/*
 * Give node i the rows of node order[i]: vector, heap TID and code; with a
 * graph, its list and degree (the ids in lists are the caller's to map);
 * its arena entry when bs->arena_id maps them.
 */
static void
move_node_rows(BuildState *bs, uint8 *codes, Size code_bytes, const uint32 *order,
			   GateannGraph *graph)
{
	uint32		n = bs->n;
	Size		row = Max(Max(sizeof(float) * bs->dims, sizeof(ItemPointerData)),
						  Max(code_bytes, sizeof(uint32)));
	uint8	   *done = palloc_extended(((Size) n + 7) / 8, MCXT_ALLOC_HUGE);
	char	   *tmp;

	if (graph != NULL)
		row = Max(row, sizeof(uint32) * graph->capacity);
	tmp = palloc(row);			/* one row of any */
	permute_node_rows(bs->vectors, sizeof(float) * bs->dims, n, order, done, tmp);
	permute_node_rows(bs->tids, sizeof(ItemPointerData), n, order, done, tmp);
	permute_node_rows(codes, code_bytes, n, order, done, tmp);
	if (graph != NULL)
	{
		permute_node_rows(graph->adj, sizeof(uint32) * graph->capacity, n, order, done, tmp);
		permute_node_rows(graph->degree, sizeof(uint16), n, order, done, tmp);
	}
	if (bs->arena_id != NULL)
		permute_node_rows(bs->arena_id, sizeof(uint32), n, order, done, tmp);
	pfree(done);
	pfree(tmp);
}

/*
 * Renumber the nodes in locality order (order.c), grouped first by the
 * coarse centroid their PQ codes name: the vectors, heap TIDs and codes
 * move to their new ids, entries[] (node ids) are mapped along, and
 * bs->arena_id keeps where each node's filter values are, so everything
 * built after this (graph, records) uses the new ids.
 */
static void
renumber_nodes(BuildState *bs, const GateannPQ *pq, uint8 *codes, uint32 *entries,
			   int nentries, GateannVectorWork *work)
{
	Size		cb = gateann_pq_code_bytes(pq->m);
	uint32	   *order = palloc_extended(sizeof(uint32) * (Size) bs->n, MCXT_ALLOC_HUGE);
	uint8	   *done;
	uint32		i;
	int			e;

	if (work != NULL)
		gateann_vector_work_order(work, codes, GATEANN_PQ_SEED, order);
	else
	{
		void	   *scratch = palloc_extended(gateann_locality_order_scratch_bytes(bs->n, bs->dims),
											  MCXT_ALLOC_HUGE);

		gateann_locality_order(bs->vectors, bs->n, bs->dims, pq->coarse, codes + pq->m, cb,
							   GATEANN_PQ_SEED, order, scratch, gateann_check_interrupts);
		pfree(scratch);
	}

	Assert(bs->arena_id == NULL);	/* the arena is in heap order */
	move_node_rows(bs, codes, cb, order, NULL);

	/* the entry points' new ids: mark the old ones, then find them in order[] */
	done = palloc_extended(((Size) bs->n + 7) / 8, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (e = 0; e < nentries; e++)
		done[entries[e] >> 3] |= 1 << (entries[e] & 7);
	for (i = 0; i < bs->n; i++)
	{
		uint32		old = order[i];

		if (!(done[old >> 3] & (1 << (old & 7))))
			continue;
		for (e = 0; e < nentries; e++)
			if (entries[e] == old)
				entries[e] = i | GATEANN_ENTRY_RENUMBERED;
	}
	for (e = 0; e < nentries; e++)
		entries[e] &= ~GATEANN_ENTRY_RENUMBERED;
	pfree(done);
	bs->arena_id = order;
}

/*
 * Pack graph neighbours onto each page (locality_order, after the graph):
 * a scan that reads a node's record soon wants the records of its nearest
 * neighbours, and gateann.page_search takes those from the page it read.
 * The nodes are taken in their locality order; each one not placed yet
 * starts or continues a page, which its list's nodes not placed yet fill,
 * then theirs (breadth first, the lists in order).  The renumbering moves
 * vectors, heap TIDs, codes, lists and degrees to the new ids, maps the
 * ids in every list and the entry points, and composes bs->arena_id.  The
 * graph is the same graph; only its ids change (and graph->sq_codes, no
 * longer used after the build's searches, no longer match).
 */
static void
pack_pages(BuildState *bs, GateannGraph *graph, uint8 *codes, Size code_bytes, int per_page)
{
	uint32		n = bs->n;
	uint32	   *order = palloc_extended(sizeof(uint32) * (Size) n, MCXT_ALLOC_HUGE);
	uint32	   *placed_at = palloc_extended(sizeof(uint32) * (Size) n, MCXT_ALLOC_HUGE);
	uint32	   *queue = palloc(sizeof(uint32) * per_page);
	uint32		pos = 0;
	uint32		u;
	uint32		i;
	int			e;

	Assert(per_page > 1);
	memset(placed_at, 0xFF, sizeof(uint32) * (Size) n);
	for (u = 0; u < n; u++)
	{
		int			queued = 0;
		int			next = 0;

		if (placed_at[u] != InvalidNodeId)
			continue;
		if ((u & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		placed_at[u] = pos;
		order[pos++] = u;
		queue[queued++] = u;
		while (pos % per_page != 0 && next < queued)
		{
			uint32		w = queue[next++];
			const uint32 *list = graph->adj + (Size) w * graph->capacity;
			int			k;

			for (k = 0; k < graph->degree[w] && pos % per_page != 0; k++)
			{
				uint32		v = list[k];

				if (v >= n || placed_at[v] != InvalidNodeId)
					continue;
				placed_at[v] = pos;
				order[pos++] = v;
				Assert(queued < per_page);
				queue[queued++] = v;
			}
		}
	}
	Assert(pos == n);
	pfree(queue);

	/* rows to their new places, and the ids that name them */
	move_node_rows(bs, codes, code_bytes, order, graph);
	for (i = 0; i < n; i++)
	{
		uint32	   *list = graph->adj + (Size) i * graph->capacity;
		int			k;

		if ((i & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		for (k = 0; k < graph->degree[i]; k++)
			if (list[k] < n)
				list[k] = placed_at[list[k]];
	}
	for (e = 0; e < graph->nentries; e++)
		graph->entries[e] = placed_at[graph->entries[e]];
	graph->medoid = placed_at[graph->medoid];
	pfree(placed_at);
	if (bs->arena_id == NULL)
		bs->arena_id = order;	/* the arena is in heap order */
	else
		pfree(order);
}

/*
 * Parallel workers for the graph: the planner's choice for this table, as for
 * a btree build.  That is the table's parallel_workers option when set, else
 * a number that grows with the table's size in pages (min_parallel_table_scan_size),
 * at most max_parallel_maintenance_workers and reduced so that each
 * participant keeps 32 MB of maintenance_work_mem; none for a temporary
 * table or when the caller wants a serial build.  Vectors stored out of line
 * (TOAST) leave the table small in pages, so such a table may need
 * parallel_workers set to build in parallel.
 */
static int
planned_workers(Relation heap, Relation index, IndexInfo *indexInfo)
{
#ifdef GATEANN_HAVE_AMCANBUILDPARALLEL
	return indexInfo->ii_ParallelWorkers;
#else
	return plan_create_index_workers(RelationGetRelid(heap), RelationGetRelid(index));
#endif
}

/*
 * Build the graph with the planner's parallel workers when it chose some, the
 * index is big enough to be worth it, and the shared copy of the vectors
 * still fits in maintenance_work_mem.  False: build serially.
 */
static bool
build_graph_parallel(BuildState *bs, GateannGraph *graph, GateannOptions *opts,
					 const uint32 *entries, int nentries, int nworkers)
{
	Size		need;

	if (nworkers <= 0 || IsInParallelMode())
	{
		elog(DEBUG1, "gateann: building the graph serially: the planner chose no parallel workers for table \"%s\"",
			 bs->heapname);
		return false;
	}
	if (bs->n < GATEANN_PARALLEL_MIN_NODES)
	{
		elog(DEBUG1, "gateann: building the graph serially: %u vectors, fewer than %d",
			 bs->n, GATEANN_PARALLEL_MIN_NODES);
		return false;
	}

	/* private arrays + the shared segment, which duplicates the vectors */
	need = (Size) bs->n * (sizeof(float) * bs->dims + sizeof(ItemPointerData) +
						   bs->per_node_graph_bytes +
						   gateann_pq_code_bytes(Max(opts->pq_subspaces, bs->pq_m))) +
		gateann_filter_arena_bytes(&bs->arena) +
		gateann_parallel_graph_bytes(graph);
	if (need > bs->memory_limit)
	{
		elog(DEBUG1, "gateann: building the graph serially: a parallel build needs %zu kB, maintenance_work_mem is %zu kB",
			 need / 1024, bs->memory_limit / 1024);
		return false;
	}
	return gateann_graph_build_parallel(graph, entries, nentries,
										opts->build_search_list_size,
										(float) opts->alpha,
										gateann_build_tunnel_neighbors(opts),
										gateann_build_chooses_tunnel_neighbors(opts),
										nworkers,
										graph_progress);
}

/*
 * Metapage defaults shared by a real build and an empty (unlogged init fork)
 * build.
 */
/*
 * How the build's records hold vectors: the option's choice; auto: halves
 * for a column of halves (pgvector's halfvec: nothing lost), else single.
 */
static int
build_record_precision(Relation index, const GateannOptions *opts)
{
	GateannVectorReader reader;

	if (opts->record_precision != GATEANN_PRECISION_AUTO)
		return opts->record_precision;
	gateann_vector_reader_init(&reader, index);
	return reader.holds_halves ? GATEANN_PRECISION_HALF : GATEANN_PRECISION_SINGLE;
}

static void
init_meta(GateannMetaPageData *meta, Relation index, GateannOptions *opts,
		  GateannMetric metric, const GateannFilterLayout *filters)
{
	memset(meta, 0, sizeof(*meta));
	meta->magic = GATEANN_MAGIC;
	meta->format_version = GATEANN_FORMAT_VERSION;
	meta->build_id = gateann_new_build_id(index);
	meta->metric = metric;
	meta->max_neighbors = opts->max_neighbors;
	meta->build_search_list_size = opts->build_search_list_size;
	meta->alpha = (float4) opts->alpha;
	meta->tunnel_neighbors = gateann_build_tunnel_neighbors(opts);
	meta->record_precision = build_record_precision(index, opts);
	meta->entry_point = InvalidNodeId;
	gateann_filter_layout_to_meta(filters, meta);
}

/*
 * How well the graph answers unfiltered searches at the session's
 * gateann.search_list_size (graph.h, gateann_graph_probe_recall): kept in
 * the metapage for gateann_index_info, and told when it is under
 * BUILD_RECALL_TARGET, with what would reach it -- a longer list (up to
 * BUILD_PROBE_MAX_LIST), or more neighbors per node.  On data of high
 * intrinsic dimension (an isotropic Gaussian of 128 dimensions or more at
 * 100K rows) a degree of 64 is not enough, and nothing else says so.
 */
#define BUILD_RECALL_TARGET		0.95
#define BUILD_PROBE_MAX_LIST	1000
#define BUILD_PROBE_LISTS		4

static void
probe_build_recall(Relation index, const GateannGraph *graph, int build_list,
				   GateannMetaPageData *meta)
{
	int			lists[BUILD_PROBE_LISTS];
	double		recall[BUILD_PROBE_LISTS];
	int			nlists = 0;
	int			tried;
	int			wider = Min(2 * graph->R, GATEANN_MAX_NEIGHBORS_LIMIT);
	char	   *rebuild;
	char	   *hint;
	char	   *detail;

	lists[nlists++] = gateann_search_list_size;
	while (nlists < BUILD_PROBE_LISTS && 2 * lists[nlists - 1] <= BUILD_PROBE_MAX_LIST)
	{
		lists[nlists] = 2 * lists[nlists - 1];
		nlists++;
	}
	tried = gateann_graph_probe_recall(graph, lists, nlists, BUILD_RECALL_TARGET, recall);
	if (tried == 0)
		return;
	meta->build_recall = (float4) recall[0];
	meta->build_recall_list = lists[0];
	if (recall[0] >= BUILD_RECALL_TARGET)
		return;

	/*
	 * A wider graph needs a build list to match: with twice the neighbors
	 * and the same list, each node's prune chooses from a pool barely longer
	 * than the list it must fill (measured on isotropic 384-dimensional rows:
	 * max_neighbors = 128 found 0.957 of the nearest rows at a list of 100
	 * with a build list of 128, 0.966 with 256).  So the advice keeps the
	 * defaults' ratio, a build list of twice max_neighbors, when the index
	 * was built with less.
	 */
	if (wider <= graph->R)
		rebuild = NULL;			/* R is at its limit: no wider graph to name */
	else if (build_list < 2 * wider)
		rebuild = psprintf("max_neighbors = %d, build_search_list_size = %d",
						   wider, Min(2 * wider, GATEANN_MAX_BUILD_LIST_SIZE));
	else
		rebuild = psprintf("max_neighbors = %d", wider);
	if (rebuild == NULL)
		hint = psprintf("Raise gateann.search_list_size for such queries.");
	else if (recall[tried - 1] >= BUILD_RECALL_TARGET)
		hint = psprintf("SET gateann.search_list_size = %d for such queries, or rebuild the index WITH (%s): vectors of high intrinsic dimension need more neighbors per node.",
						lists[tried - 1], rebuild);
	else
		hint = psprintf("Rebuild the index WITH (%s): vectors of high intrinsic dimension need more neighbors per node.",
						rebuild);
	if (tried > 1)
		detail = psprintf("The build searched for %d of the indexed vectors: a list of %d found %.2f of their %d nearest rows, a list of %d %.2f.",
						  GATEANN_GRAPH_PROBE_QUERIES, lists[0], recall[0], GATEANN_GRAPH_PROBE_K,
						  lists[tried - 1], recall[tried - 1]);
	else
		detail = psprintf("The build searched for %d of the indexed vectors: a list of %d found %.2f of their %d nearest rows.",
						  GATEANN_GRAPH_PROBE_QUERIES, lists[0], recall[0], GATEANN_GRAPH_PROBE_K);
	ereport(NOTICE,
			(errmsg("gateann index \"%s\" finds under %d%% of a query's %d nearest rows at gateann.search_list_size = %d",
					RelationGetRelationName(index), (int) (BUILD_RECALL_TARGET * 100),
					GATEANN_GRAPH_PROBE_K, lists[0]),
			 errdetail_internal("%s", detail),
			 errhint("%s", hint)));
}

/*
 * Train with the planner's parallel workers (the same codebook as serially:
 * pq_parallel.c) when it chose some, the build is in memory and big enough
 * to start them, and the shared copy of the sample, in place of the serial
 * scratch, keeps the build within maintenance_work_mem.  False: train
 * serially.
 */
static bool
train_codebook_parallel(BuildState *bs, GateannPQ *pq, const float *sample, int nsample,
						int nworkers)
{
	Size		need;

	if (!bs->parallel || bs->spill != NULL || bs->n < GATEANN_PARALLEL_MIN_NODES ||
		nsample < GATEANN_PQ_CENTROIDS)
		return false;
	need = memory_need(bs, bs->n, 1.0) -
		gateann_pq_train_scratch_bytes(nsample, bs->dims, pq->m) +
		gateann_parallel_pq_bytes(nsample, bs->dims);
	if (need > bs->memory_limit)
	{
		elog(DEBUG1, "gateann: training the PQ codebook serially: in parallel it needs %zu kB, maintenance_work_mem is %zu kB",
			 need / 1024, bs->memory_limit / 1024);
		return false;
	}
	return gateann_pq_train_parallel(pq, sample, nsample, GATEANN_PQ_SEED,
									 GATEANN_PQ_TRAIN_ITERATIONS, nworkers);
}

/*
 * Step 2: the PQ codebook, trained on a sample of the vectors (a partial
 * Fisher-Yates over an index array); sets meta's PQ fields.
 */
static void
train_codebook(BuildState *bs, Relation index, const GateannOptions *opts,
			   GateannMetaPageData *meta, GateannPQ *pq, int nworkers)
{
	int			m = gateann_pq_subspaces(index, opts, bs->dims);
	int			nsample = (int) Min((uint32) GATEANN_PQ_TRAIN_SAMPLE, bs->n);
	float	   *sample;
	void	   *scratch;

	meta->pq_subspaces = m;

	if (bs->spill != NULL)
	{
		/* the sample the spill kept */
		nsample = bs->spill->nsample;
		sample = bs->spill->sample;
		bs->spill->sample = NULL;
		report_phase(GATEANN_PHASE_TRAIN, nsample);
	}
	else
	{
		uint32	   *perm;
		uint32		i;
		uint64		rng = GATEANN_PQ_SEED;

		report_phase(GATEANN_PHASE_TRAIN, nsample);
		sample = palloc_extended(sizeof(float) * bs->dims * (Size) nsample, MCXT_ALLOC_HUGE);
		perm = palloc_extended(sizeof(uint32) * (Size) bs->n, MCXT_ALLOC_HUGE);
		for (i = 0; i < bs->n; i++)
			perm[i] = i;
		for (i = 0; i < (uint32) nsample; i++)
		{
			uint32		j = i + (uint32) (gateann_random_next(&rng) % (bs->n - i));
			uint32		t = perm[i];

			perm[i] = perm[j];
			perm[j] = t;
			memcpy(sample + (Size) i * bs->dims,
				   bs->vectors + (Size) perm[i] * bs->dims, sizeof(float) * bs->dims);
		}
		pfree(perm);
	}
	gateann_pq_attach(pq, bs->dims, m,
					  palloc_extended(gateann_pq_codebook_bytes(bs->dims),
									  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO));
	if (!train_codebook_parallel(bs, pq, sample, nsample, nworkers))
	{
		scratch = palloc_extended(gateann_pq_train_scratch_bytes(nsample, bs->dims, m),
								  MCXT_ALLOC_HUGE);
		gateann_pq_train(pq, sample, nsample, GATEANN_PQ_SEED, GATEANN_PQ_TRAIN_ITERATIONS,
						 scratch, gateann_check_interrupts);
		pfree(scratch);
	}
	meta->pq_trained_rows = (uint32) nsample;
	meta->pq_retrain_at = gateann_pq_next_retrain((uint32) nsample);
	pfree(sample);
}

/*
 * Encoding and ordering with the planner's parallel workers when it chose
 * some, the build is in memory and big enough to start them, and the shared
 * copy of the vectors fits in maintenance_work_mem beside the private ones
 * (and the coarse distances encoding keeps).  NULL: work serially.
 */
static GateannVectorWork *
begin_vector_work(BuildState *bs, const GateannPQ *pq, int nworkers)
{
	Size		need;

	if (!bs->parallel || bs->spill != NULL || bs->n < GATEANN_PARALLEL_MIN_NODES)
		return NULL;
	need = memory_need(bs, bs->n, 1.0) + (Size) bs->n * sizeof(float) +
		gateann_vector_work_bytes(bs->n, bs->dims, pq->m);
	if (need > bs->memory_limit)
	{
		elog(DEBUG1, "gateann: encoding and ordering serially: in parallel they need %zu kB, maintenance_work_mem is %zu kB",
			 need / 1024, bs->memory_limit / 1024);
		return NULL;
	}
	return gateann_vector_work_begin(pq, bs->vectors, bs->n, nworkers);
}

/*
 * Encode every vector (with work's workers when not NULL); the member of
 * each coarse group nearest its centroid becomes an entry point
 * (entries[0 .. *nentries)).  Returns the codes, code_bytes each.
 */
static uint8 *
encode_vectors(BuildState *bs, const GateannPQ *pq, GateannMetaPageData *meta,
			   uint32 *entries, int *nentries, GateannVectorWork *work)
{
	int			m = meta->pq_subspaces;
	Size		cb = gateann_pq_code_bytes(m);
	uint8	   *codes;
	float	   *coarse_dist;
	float		best[GATEANN_PQ_CENTROIDS];
	uint32		medoid[GATEANN_PQ_CENTROIDS];
	uint32		i;
	int			g;

	report_phase(GATEANN_PHASE_ENCODE, bs->n);
	codes = palloc_extended((Size) bs->n * cb, MCXT_ALLOC_HUGE);
	/* (in the place memory_need counts for the training sample, freed now) */
	coarse_dist = palloc_extended((Size) bs->n * sizeof(float), MCXT_ALLOC_HUGE);
	if (work != NULL)
		gateann_vector_work_encode(work, codes, coarse_dist);
	else
	{
		float	   *residual = palloc(sizeof(float) * bs->dims);

		for (i = 0; i < bs->n; i++)
		{
			(void) gateann_pq_encode(pq, bs->vectors + (Size) i * bs->dims,
									 codes + (Size) i * cb, residual, &coarse_dist[i]);
			if ((i & 4095) == 0)
			{
				CHECK_FOR_INTERRUPTS();
				pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, i);
			}
		}
		pfree(residual);
	}

	for (g = 0; g < GATEANN_PQ_CENTROIDS; g++)
		medoid[g] = InvalidNodeId;
	for (i = 0; i < bs->n; i++)
	{
		g = gateann_pq_code_group(codes + (Size) i * cb, m);
		if (medoid[g] == InvalidNodeId || coarse_dist[i] < best[g])
		{
			medoid[g] = i;
			best[g] = coarse_dist[i];
		}
	}
	pfree(coarse_dist);
	meta->pq_spacing = gateann_pq_coarse_spacing(pq);
	*nentries = 0;
	for (g = 0; g < GATEANN_PQ_CENTROIDS; g++)
		if (medoid[g] != InvalidNodeId)
			entries[(*nentries)++] = medoid[g];
	return codes;
}

/*
 * Steps 2-3 for vectors that left memory (build_merge.h): codes, entry
 * points and a graph built in partitions, whose nodes write_index takes
 * from merge in id order.
 */
static void
build_in_partitions(BuildState *bs, const GateannOptions *opts, GateannMetaPageData *meta,
					const GateannPQ *pq, GateannMergeBuild *merge, int nworkers)
{
	memset(merge, 0, sizeof(*merge));
	merge->spill = bs->spill;
	merge->pq = pq;
	merge->R = opts->max_neighbors;
	merge->L = opts->build_search_list_size;
	merge->alpha = (float) opts->alpha;
	merge->r_max = gateann_build_tunnel_neighbors(opts);
	merge->choose_r_max = gateann_build_chooses_tunnel_neighbors(opts);
	merge->nworkers = bs->parallel ? nworkers : 0;
	merge->capacity = partition_capacity(bs, bs->n);
	merge->phase = report_phase;
	merge->memory_root = CurrentMemoryContext;
	gateann_merge_build(merge);

	meta->pq_spacing = gateann_pq_coarse_spacing(pq);
	meta->tunnel_neighbors = merge->r_max_chosen;
	meta->entry_point = merge->medoid;
	meta->nentries = merge->nentries;
	memcpy(meta->entries, merge->entries, sizeof(uint32) * merge->nentries);
	elog(DEBUG1, "gateann build in partitions: %d partitions, peak memory %zu kB of maintenance_work_mem %zu kB",
		 merge->npartitions, merge->peak_memory / 1024, bs->memory_limit / 1024);
}

/*
 * The graph of an index built in memory: with workers when the planner
 * chose some and the shared copy fits, else serially; then the recall probe
 * (its figure in the metapage, a NOTICE when low).
 */
static void
build_graph_in_memory(BuildState *bs, Relation index, GateannOptions *opts,
					  GateannMetaPageData *meta, GateannGraph *graph, uint32 *entries,
					  int nentries, int nworkers)
{
	memset(graph, 0, sizeof(*graph));
	graph->dims = bs->dims;
	graph->n = bs->n;
	graph->vectors = bs->vectors;
	graph->R = opts->max_neighbors;
	if (!build_graph_parallel(bs, graph, opts, entries, nentries, nworkers))
		gateann_graph_build(graph, entries, nentries, opts->build_search_list_size,
							(float) opts->alpha, gateann_build_tunnel_neighbors(opts),
							gateann_build_chooses_tunnel_neighbors(opts),
							graph_progress);
	meta->tunnel_neighbors = graph->r_max;
	probe_build_recall(index, graph, opts->build_search_list_size, meta);
}

/*
 * Steps 2-3 in memory: codebook, codes and entry points, locality order
 * (with the planner's workers where it chose some), graph.  Returns the
 * codes.
 */
static uint8 *
build_in_memory(BuildState *bs, Relation index, GateannOptions *opts,
				GateannMetaPageData *meta, GateannPQ *pq, GateannGraph *graph,
				uint32 *entries, int *nentries, int nworkers)
{
	GateannVectorWork *work;
	uint8	   *codes;

	train_codebook(bs, index, opts, meta, pq, nworkers);
	work = begin_vector_work(bs, pq, nworkers);
	codes = encode_vectors(bs, pq, meta, entries, nentries, work);
	if (bs->locality_order && bs->n >= GATEANN_ORDER_MIN_NODES)
	{
		report_phase(GATEANN_PHASE_ORDER, bs->n);
		renumber_nodes(bs, pq, codes, entries, *nentries, work);
	}
	if (work != NULL)
		gateann_vector_work_end(work);

	/* 3. graph */
	build_graph_in_memory(bs, index, opts, meta, graph, entries, *nentries, nworkers);
	return codes;
}

IndexBuildResult *
gateann_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	BuildState	bs;
	GateannOptions *opts = gateann_get_options(index);
	GateannMetaPageData meta;
	GateannPQ	pq;
	uint8	   *codes = NULL;
	GateannGraph graph;
	uint32		entries[GATEANN_PQ_CENTROIDS];
	int			nentries = 0;
	int			nworkers;
	GateannMergeBuild merge;
	char	   *dict;
	MemoryContext buildcxt,
				oldcxt;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));

	gateann_store_forget_index(index);
	gateann_check_options(opts);
	gateann_distance_init();

	buildcxt = AllocSetContextCreate(CurrentMemoryContext, "gateann build",
									 ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(buildcxt);

	memset(&bs, 0, sizeof(bs));
	bs.index = index;
	bs.heapname = RelationGetRelationName(heap);
	bs.metric = gateann_index_metric(index);
	gateann_vector_reader_init(&bs.reader, index);
	bs.max_neighbors = opts->max_neighbors;
	bs.pq_option = opts->pq_subspaces;
	bs.locality_order = opts->locality_order;
	bs.half = (build_record_precision(index, opts) == GATEANN_PRECISION_HALF);
	bs.filters = gateann_filter_layout_create(index);
	gateann_filter_arena_init(&bs.arena, bs.filters);
	gateann_filter_arena_init(&bs.tail_arena, bs.filters);
	bs.memory_limit = (Size) maintenance_work_mem * 1024;
	bs.tmpcxt = AllocSetContextCreate(buildcxt, "gateann build tuple",
									  ALLOCSET_DEFAULT_SIZES);
	nworkers = planned_workers(heap, index, indexInfo);
	bs.parallel = nworkers > 0 && !IsInParallelMode();

	/* 1. heap scan */
	report_phase(GATEANN_PHASE_SCAN, heap->rd_rel->reltuples);
	table_index_build_scan(heap, index, indexInfo, true, true,
						   build_callback, &bs, NULL);
	check_memory_after_scan(&bs);

	init_meta(&meta, index, opts, bs.metric, bs.filters);
	if (bs.half)
		meta.record_error = gateann_half_error_bound(bs.record_error);
	/* (an index of tail records only has seen no vector to lay out for) */
	meta.dims = bs.n > 0 ? bs.dims : 0;
	meta.nnodes = bs.n + bs.ntail;

	memset(&graph, 0, sizeof(graph));
	if (bs.n > 0 && bs.spill != NULL)
	{
		train_codebook(&bs, index, opts, &meta, &pq, nworkers);
		build_in_partitions(&bs, opts, &meta, &pq, &merge, nworkers);
	}
	else if (bs.n > 0)
		codes = build_in_memory(&bs, index, opts, &meta, &pq, &graph, entries, &nentries,
								nworkers);

	/* 4. pages */
	gateann_filter_build_dictionaries(index, &meta, bs.filters, &bs.arena, bs.n, &dict);
	gateann_layout_records(&meta);
	if (bs.n > 0 && bs.spill == NULL)
	{
		if (bs.locality_order && bs.n >= GATEANN_ORDER_MIN_NODES &&
			meta.records_per_page > 1)
			pack_pages(&bs, &graph, codes, gateann_pq_code_bytes(pq.m),
					   (int) meta.records_per_page);
		meta.entry_point = graph.medoid;
		meta.nentries = graph.nentries;
		memcpy(meta.entries, graph.entries, sizeof(uint32) * graph.nentries);
	}
	report_phase(GATEANN_PHASE_WRITE, bs.n);
	write_index(index, MAIN_FORKNUM, &meta, &bs, &pq, codes, &graph,
				bs.spill != NULL && bs.n > 0 ? &merge : NULL, dict);
	if (bs.spill != NULL && bs.n > 0)
		gateann_merge_end(&merge);

	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, 0,
						  RelationGetNumberOfBlocks(index), true);
	/* scans read node pages from the file directly: put them there now */
	FlushRelationBuffers(index);
	report_phase(0, 0);

	MemoryContextSwitchTo(oldcxt);
	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = bs.reltuples;
	result->index_tuples = bs.n + bs.ntail;
	MemoryContextDelete(buildcxt);
	return result;
}

/*
 * Init fork of an unlogged index: just a metapage for an index of no rows.
 */
void
gateann_buildempty(Relation index)
{
	GateannOptions *opts = gateann_get_options(index);
	GateannMetaPageData meta;
	GateannFilterLayout *filters;
	PGAlignedBlock pagebuf;
	char	   *dict;

	filters = gateann_filter_layout_create(index);
	init_meta(&meta, index, opts, gateann_index_metric(index), filters);
	gateann_filter_build_dictionaries(index, &meta, filters, NULL, 0, &dict);
	gateann_layout_records(&meta);
	meta.codebook_start = meta.dict_start = meta.node_start = 1;

	gateann_init_page(pagebuf.data, GATEANN_PAGE_META);
	gateann_write_page(index, INIT_FORKNUM, 0, pagebuf.data, false);
	gateann_write_meta_page(index, INIT_FORKNUM, &meta);
	log_newpage_range(index, INIT_FORKNUM, 0, 1, true);
}

