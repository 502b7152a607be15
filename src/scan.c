/*
 * scan.c — ORDER BY vector <op> query scans.
 *
 * The search is GateANN's Algorithm 1:
 *
 *   frontier   candidates ordered by PQ distance (PQ codes from the
 *              in-memory store, store.c), at most L of them, L / s for a
 *              filter the sampled share s of the nodes passes (L counts the
 *              candidates that may match: a gate round stops at the L-th
 *              candidate passing the in-memory check, wherever that is in
 *              the list); it starts from the entry points
 *              nearest the query, and for a filtered gate search from the
 *              nearest ones that pass the in-memory check too
 *   dispatch   while fewer than W = gateann.io_width reads are in flight,
 *              take the best undispatched candidate; in gate mode one the
 *              in-memory filter check rules out is crossed in memory
 *              through the neighbor store (tunneled: no read, never a
 *              result), the others get an asynchronous read of their
 *              record (io.c)
 *   completion for each landed record: exact distance from its
 *              full-precision vector into the result set (after the exact
 *              filter check on the record), its full neighbor list into the
 *              frontier by PQ distance
 *
 * A round ends when no undispatched candidate is left and nothing is in
 * flight; every completed node is then a result, returned in ascending exact
 * distance.  Completions are applied in dispatch order (a small reorder
 * window holds records that land early), so the rows a scan returns do not
 * depend on device timing: every gateann.io_method gives the same rows at
 * equal L and W.
 *
 * Streaming: when the results of a round run out (the executor filtered
 * rows away, or LIMIT exceeds L) the search resumes with twice the list
 * size, refilling the frontier from candidates it had pushed out, until
 * gateann.max_scan_tuples nodes were read or the graph is exhausted
 * (gateann.iterative_scan = off stops after the first round).  Rows of one
 * round come in exact order; a later round may find rows closer than some
 * already returned: strict_order (the default) skips those, relaxed_order
 * returns them.  So strict_order runs a further round before the executor
 * passes a row on while the candidates it would start from could hold a
 * closer one (a row that could be beaten goes out with a lower bound the
 * executor holds it behind; the round runs when the next row is asked for),
 * and tests rows in doubling windows (the first ten before the first row,
 * the next ten after them, then twenty, ...): strict_window_wants_round.  A
 * scan that stops at the budget while the executor still wants rows says so
 * (a NOTICE per statement, budget_exhausted).
 *
 * Pre-filtering (prefilter.h): in gate mode, a filter a sample says is
 * selective (gateann.prefilter_selectivity) skips the graph: the frontier
 * is loaded with the best L of all nodes passing the in-memory check, by
 * PQ distance, and the same pipeline reads, verifies and ranks them
 * without expanding neighbors.  Streaming loads the next 2L, 4L, ...
 *
 * A memory walk (gateann.read_list_size > 0) crosses every candidate in
 * memory like a tunneled one, pools those that may match, and reads only
 * the best of the pool by PQ distance in batches (read_phase_begin), and
 * walks on from the whole neighbor lists of what it read (memory_walk_feed); see
 * doc/how-it-works.md, "Search and streaming".
 *
 * Records are read straight from the index's files.  The file may lag shared
 * buffers for pages writers changed: each node block has a mark in the store
 * (the LSN the file must have reached, store.h), and a page read from the
 * file that is older than its mark, fails validation, or holds another node,
 * is re-read through the buffer manager, as is a read that fails.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "gateann.h"
#include "distance.h"
#include "filter.h"
#include "io.h"
#include "meta.h"
#include "page.h"
#include "page_stash.h"
#include "prefilter.h"
#include "record_cache.h"
#include "search.h"
#include "store.h"
#include "tail.h"
#include "topk.h"
#include "vector.h"

#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "portability/instr_time.h"
#include "pgstat.h"
#include "utils/float.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

/* A filtered search's list is at most this many times L (first_list_size) */
#define GATEANN_LIST_SCALE_MAX	64
/* ... and never longer than this */
#define GATEANN_MAX_LIST_SIZE	1000000
/* Rows strict_order tests before it returns the first (strict_window_wants_round) */
#define STRICT_FIRST_ROWS	10

/* Min-heap element of the results (exact distances) */
typedef struct HeapEntry
{
	float		dist;
	uint32		id;
	ItemPointerData tid;
	bool		recheck;		/* the record could not verify the filter */
	float		norm;			/* inner product: the vector's length (the
								 * rounding bound, gateann_distance_lower_bound) */
} HeapEntry;

/* Heap order: distance, then node id so that ties come out deterministically */
static inline bool
heap_less(const HeapEntry *a, const HeapEntry *b)
{
	return a->dist < b->dist || (a->dist == b->dist && a->id < b->id);
}

typedef struct MinHeap
{
	HeapEntry  *items;
	int			size;
	int			capacity;
} MinHeap;

/* Candidates pushed out of the frontier, in no order */
typedef struct EvictedPool
{
	GateannScored *items;
	int			size;
	int			capacity;
} EvictedPool;

typedef struct GateannScanOpaqueData
{
	MemoryContext cxt;			/* reset at every rescan */

	bool		initialized;	/* search state built for current keys */
	bool		no_results;		/* keys can never match */
	bool		exhausted;		/* nothing left to expand */
	bool		need_recheck;	/* keys we did not evaluate */

	GateannMetaPageData meta;
	GateannStore *store;
	GateannMetric metric;
	GateannVectorReader reader;

	float	   *query;
	float	   *table;			/* PQ distance table */
	float		pq_offset;		/* its distances are this short of true ones
								 * (gateann_pq_distance_table) */

	/* scan keys on filter columns, compiled (filter.c) */
	GateannFilter *filter;
	bool		filtering;		/* filter has keys */
	int			filter_mode;	/* gateann.filter_mode of this scan */
	int			tunnel_neighbors;	/* neighbors used when tunneling */
	uint32	   *rowbuf;			/* neighbor-store rows of a tunnel run or a
								 * record's list, copied out */
	GateannCandidate *batch;	/* as many entries: new neighbors, sorted */
	int			batch_size;		/* ... entries in rowbuf and batch */
	int			tunnel_batch;	/* gateann.tunnel_batch of this scan */
	uint32		known_match;	/* a candidate that passed the check, or
								 * InvalidNodeId */

	/*
	 * Speculative pre-filtering (prefilter.h): the frontier holds batches of
	 * the pre-filtered candidates instead of a graph search's.
	 */
	bool		prefilter;
	GateannPrefilter pf;

	/*
	 * A memory walk (memory_walk_first_round, memory_walk_next_round): the
	 * graph is walked in memory, every
	 * candidate crossed through the neighbor store; those that may match go
	 * into pf (the pool), and only the best of them by PQ distance are read,
	 * in batches (reading).  While a batch is read, the walk's list waits
	 * in `walk`.
	 */
	bool		memory_walk;
	bool		reading;
	bool		walk_done;		/* the walk cannot go on (resume_search) */
	int			read_batch;		/* candidates the next batch reads */
	GateannCandidate *read_list;	/* the frontier while reading */
	int			read_list_size;
	float		read_worst;		/* the largest PQ distance read so far */
	uint32	   *read_nbrs;		/* full neighbor lists of the records read, */
	int64		read_nbrs_n;	/* ... for the walk (memory_walk_feed) */
	int64		read_nbrs_size;
	struct
	{
		GateannCandidate *frontier;
		int			fsize;
		int			L;
		int			first_unexpanded;
		int64		window_matches;
		int64		matches_before;
		bool		window_cut;
	}			walk;
	double		filter_fraction;	/* sampled share of nodes passing the filter store */
	int64		matched;		/* read nodes that passed the filter */
	bool		stuck_probe;	/* first round: test search_is_stuck once the
								 * walk is long enough */
	bool		walk_abandoned; /* ... it was: dispatch no more */
	bool		all_entries_seeded; /* every entry point was put into the list */
	int			iterative;		/* gateann.iterative_scan of this scan */
	bool		budget_spent;	/* stopped at gateann.max_scan_tuples */
	/* rows returned and tunneled nodes are counted in stats */
	/* strict_order's account of the rows returned (gettuple) */
	float		max_bound;		/* the largest distance bound returned */
	float		passed;			/* the farthest row returned below it */
	float	   *unpassed;		/* distances of the other rows returned */
	int			nunpassed;
	int			unpassed_size;
	float		last_dist;		/* the last row returned was at this distance */
	bool		last_untested;	/* ... and could be beaten */
	bool		lookahead_taken;	/* a row past the window was returned
									 * (strict_window_wants_round) */
	double		query_norm;		/* inner product: the query's length */
	double		vector_error;	/* records of halves: gateann_distance_lower_bound's */
	float	   *vecbuf;			/* a record's vector decoded (dims floats) */
	BlockNumber heap_blocks;	/* the table's size as last looked up
								 * (check_heap_tid) */
	int64		strict_window;	/* strict_order tested the rows up to this one */
	GateannScored *strict_scratch;	/* ... with this copy of the result distances */
	int			strict_scratch_size;
	float		unreached;		/* unreached_bound() after the last round */
	/* PQ distance less exact distance of the nodes read: count, sum, squares */
	int64		over_n;
	double		over_sum;
	double		over_sq;

	GateannCandidate *frontier;	/* by PQ distance; expanded: dispatched
								 * (read issued or done) or tunneled */
	int			fsize;
	int			L;				/* current list size */
	int			first_unexpanded;

	/*
	 * A filtered gate walk's list window (first_list_size): a round expands
	 * candidates until window_matches of them, counted in list order, passed
	 * the in-memory check; 0: no window (the whole list).
	 */
	int64		window_matches;
	int64		matches_before; /* may_match entries before first_unexpanded */
	bool		window_cut;		/* the last round stopped at the window */
	EvictedPool evicted;		/* candidates pushed out of the frontier */
	MinHeap		results;		/* expanded, not yet returned */
	uint8	   *visited;		/* bitmap over node ids */
	int64		expanded;
	/* rows without a distance (tail.h): after the search, or instead of it */
	GateannTailScan tail;
	bool		search_done;	/* the search has no row left to find */
	bool		query_has_distance;	/* else every row's distance is NULL or NaN */
	bool		query_null;		/* ... NULL: the query is NULL */

	GateannScanStats stats;		/* this scan's counters, published at endscan */
	bool		track_timing;	/* gateann.track_timing when the search began */
	instr_time	compute_time;	/* ... and the time measured (stats in us) */
	instr_time	tunnel_time;

	/* reads */
	GateannIo  *io;
	bool		read_resident;	/* copy records shared buffers hold (auto) */
	Relation	io_index;		/* the index, for read_resident */
	int64		resident_pages; /* pages read_resident copied */
	bool		use_cache;		/* records from the shared record cache */
	GateannRecordCacheKey cache_key;
	int			width;
	/*
	 * Reads in flight now (gateann.dynamic_width): a walk's first reads
	 * approach the query one hop after another, and reads issued
	 * alongside them are mostly of candidates the next hop leaves behind;
	 * the width doubles each time as many reads in a row as it allows
	 * found no node closer than the closest read so far, up to width.
	 */
	int			cur_width;
	int			stale_reads;	/* reads in a row that came no closer */
	float		best_read;		/* the smallest exact distance read */
	uint64		next_seq;		/* dispatch sequence number of the next read */
	uint64		head_seq;		/* next one to apply */
	struct PendingRead *pending;	/* reorder window, width entries */
	int64		rereads;		/* records re-read through the buffer manager */

	/*
	 * gateann.page_search, for records smaller than a page: the pages reads
	 * brought in, and each read's page until it is applied (keep_pages);
	 * the other records of each page searched (search_pages)
	 */
	bool		keep_pages;
	bool		search_pages;
	GateannPageStash stash;

} GateannScanOpaqueData;

typedef GateannScanOpaqueData *GateannScanOpaque;

/* A dispatched read, until it is applied */
typedef struct PendingRead
{
	uint32		id;
	float		pq_dist;		/* its PQ distance in the list */
	bool		landed;
	bool		valid;			/* record holds the record read from the file */
	XLogRecPtr	lsn;			/* ... from pages of at least this LSN */
	char	   *record;			/* record_size bytes */
	bool		has_page;		/* page holds the page the record came from */
	bool		page_from_file; /* ... read from the file (not shared buffers) */
	char	   *page;			/* BLCKSZ bytes, under page search */
} PendingRead;

/* Room for one more item */
static inline void
heap_reserve(MinHeap *h)
{
	if (h->size == h->capacity)
	{
		h->capacity = h->capacity == 0 ? 256 : h->capacity * 2;
		if (h->items == NULL)
			h->items = palloc(sizeof(HeapEntry) * h->capacity);
		else
			h->items = repalloc_huge(h->items, sizeof(HeapEntry) * h->capacity);
	}
}

/* Move items[i] down to its place below it */
static void
heap_sift_down(MinHeap *h, int i)
{
	HeapEntry	e = h->items[i];

	for (;;)
	{
		int			child = 2 * i + 1;

		if (child >= h->size)
			break;
		if (child + 1 < h->size && heap_less(&h->items[child + 1], &h->items[child]))
			child++;
		if (!heap_less(&h->items[child], &e))
			break;
		h->items[i] = h->items[child];
		i = child;
	}
	h->items[i] = e;
}

static void
heap_push(MinHeap *h, HeapEntry e)
{
	int			i;

	heap_reserve(h);
	i = h->size++;
	while (i > 0)
	{
		int			parent = (i - 1) / 2;

		if (!heap_less(&e, &h->items[parent]))
			break;
		h->items[i] = h->items[parent];
		i = parent;
	}
	h->items[i] = e;
}

static HeapEntry
heap_pop(MinHeap *h)
{
	HeapEntry	top = h->items[0];

	h->items[0] = h->items[--h->size];
	if (h->size > 0)
		heap_sift_down(h, 0);
	return top;
}

static bool node_may_match(GateannScanOpaque so, uint32 id);

/* A candidate that fell off the frontier, kept for a resumed search */
static inline void
evict(GateannScanOpaque so, uint32 id, float dist)
{
	EvictedPool *p = &so->evicted;

	/* (most scans never look at these again: no order kept, see grow_and_refill) */
	if (p->size == p->capacity)
	{
		p->capacity = p->capacity == 0 ? 256 : p->capacity * 2;
		p->items = p->items == NULL ? palloc(sizeof(GateannScored) * p->capacity) :
			repalloc_huge(p->items, sizeof(GateannScored) * p->capacity);
	}
	p->items[p->size].dist = dist;
	p->items[p->size].id = id;
	p->size++;
}

/* (a GateannDropFn) */
static void
evict_dropped(void *arg, uint32_t id, float dist)
{
	evict((GateannScanOpaque) arg, id, dist);
}

/*
 * Merge batch[0..nb-1] (sorted by distance; equal ones in the order they
 * came) into the frontier; what falls off it goes to `evicted`, and the scan
 * point moves back to the best new entry.
 */
static void
frontier_merge(GateannScanOpaque so, const GateannCandidate *batch, int nb)
{
	int			pos;

	if (so->window_matches > 0 && nb > 0)
	{
		/*
		 * The best new entry goes behind every entry at most as far; the
		 * entries between there and first_unexpanded move behind it (or
		 * drop off), so their matches no longer come before the scan point.
		 * Those before it stay where they are.
		 */
		int			lo = 0,
					hi = so->first_unexpanded;

		while (lo < hi)
		{
			int			mid = (lo + hi) / 2;

			if (so->frontier[mid].dist <= batch[0].dist)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < so->first_unexpanded; lo++)
			so->matches_before -= so->frontier[lo].may_match;
	}
	pos = gateann_candidate_merge(so->frontier, &so->fsize, so->L, batch, nb,
								  evict_dropped, so);

	if (pos >= 0 && pos < so->first_unexpanded)
		so->first_unexpanded = pos;
}

/* Insert one candidate into the sorted frontier */
static void
frontier_insert(GateannScanOpaque so, uint32 id, float dist)
{
	GateannCandidate e;

	e.dist = dist;
	e.id = id;
	e.expanded = 0;
	e.may_match = so->window_matches > 0 && node_may_match(so, id);
	frontier_merge(so, &e, 1);
}

/*
 * An exact distance on the scale of PQ distances.  They agree except for
 * cosine: the exact distance is then -dot of unit vectors, the PQ table
 * squared L2 between them (see begin_search), and |q - x|^2 = 2 - 2 dot.
 */
static inline float
on_pq_scale(GateannScanOpaque so, float exact)
{
	if (so->metric == GATEANN_METRIC_COSINE)
		return 2.0f + 2.0f * exact - so->pq_offset;
	if (so->metric == GATEANN_METRIC_L2)
		return exact - so->pq_offset;
	return exact;
}

static inline float
pq_distance(GateannScanOpaque so, uint32 id)
{
	so->stats.pq_distances++;
	return gateann_pq_code_distance(so->table, gateann_store_code(so->store, id),
									so->meta.pq_subspaces);
}

/* Entry points a search starts from (the nearest; in gate mode also the nearest matching) */
#define SCAN_ENTRY_SEEDS	4

static void
seed_one(GateannScanOpaque so, uint32 id)
{
	if (id >= so->store->capacity || !gateann_store_has(so->store, id) ||
		gateann_visit(so->visited, id))
		return;
	frontier_insert(so, id, pq_distance(so, id));
}

/*
 * Add the unvisited neighbors among nbrs[0..n-1] (ids the store holds) to
 * the frontier by PQ distance: first keep them and prefetch their codes
 * (random reads of an N * M-byte array: the misses overlap), then compute.
 * nbrs is overwritten.
 */
static void
frontier_add_neighbors(GateannScanOpaque so, uint32 *nbrs, int n)
{
	GateannCandidate *batch = so->batch;
	int			keep = 0;
	int			nbatch = 0;
	int			pos;
	int			i;

	for (i = 0; i < n; i++)
	{
		uint32		nb = nbrs[i];

		/* (a node being inserted right now is not in the store yet) */
		if (!gateann_store_has(so->store, nb) || gateann_visit(so->visited, nb))
			continue;
		gateann_store_prefetch_code(so->store, nb);
		nbrs[keep++] = nb;
	}
	for (i = 0; i < keep; i++)
	{
		float		dist = pq_distance(so, nbrs[i]);

		if (gateann_candidate_rejects(so->frontier, so->fsize, so->L, dist))
		{
			evict(so, nbrs[i], dist);
			continue;
		}
		/* sorted, equal distances in arrival order; never full (keep slots) */
		pos = gateann_candidate_insert(batch, &nbatch, keep, nbrs[i], dist);
		if (so->window_matches > 0)
			batch[pos].may_match = node_may_match(so, nbrs[i]);
	}
	if (nbatch > 0)
		frontier_merge(so, batch, nbatch);
}

/* Is rec node id's record, usable (scan.c's one test of a copy, whatever its source)? */
static inline bool
record_is_node(const GateannScanOpaque so, uint32 id, const char *rec)
{
	return GateannRecordHeader(rec)->node_id == id && gateann_record_usable(&so->meta, rec);
}

/*
 * Copy node id's record out of pages read from the file, checking that they
 * are valid node pages holding that node and, unless it is deleted, that the
 * record matches its check (the file page may have been read while it was
 * being written out); false means "re-read it".  Pages copied out of shared
 * buffers (current) are the latest version, whole: no page check, no mark.
 */
static bool
record_from_pages(GateannScanOpaque so, uint32 id, BlockNumber blkno, char *data,
				  bool current, char *dst, XLogRecPtr *lsn)
{
	const GateannMetaPageData *meta = &so->meta;
	GateannRecordLoc loc = gateann_record_location(meta, id);
	int			npages = meta->pages_per_record;
	uint32		remaining = meta->record_size;
	uint32		offset = loc.offset;
	int			i;

	if (blkno != loc.block || (!current && !gateann_io_pages_valid(data, blkno, npages)))
		return false;
	*lsn = InvalidXLogRecPtr;
	for (i = 0; i < npages; i++)
	{
		Page		page = (Page) (data + (Size) i * BLCKSZ);
		uint32		chunk = Min(remaining, (uint32) GATEANN_PAGE_CAPACITY - offset);

		if (!gateann_page_is_valid(page, GATEANN_PAGE_NODES))
			return false;
		if (i == 0 || PageGetLSN(page) < *lsn)
			*lsn = PageGetLSN(page);

		/*
		 * Older than the version a writer left in shared buffers (the file
		 * lags the buffer manager until the page is written out)?
		 */
		if (!current && PageGetLSN(page) < gateann_store_block_mark(so->store,
																	blkno + i - meta->node_start))
			return false;
		memcpy(dst, PageGetContents(page) + offset, chunk);
		dst += chunk;
		remaining -= chunk;
		offset = 0;
	}
	dst -= meta->record_size;
	return record_is_node(so, id, dst);
}

/*
 * Node id's record rec, at exact distance dist from its vector vec (as
 * gateann_record_vector gave it), into the results
 */
static void
push_result(GateannScanOpaque so, uint32 id, const char *rec, const float *vec, float dist,
			GateannFilterResult fr)
{
	HeapEntry	r;

	r.dist = dist;
	r.id = id;
	r.tid = GateannRecordHeader(rec)->heap_tid;
	r.recheck = (fr == GATEANN_FILTER_UNKNOWN);
	r.norm = 0;
	/* (of the row's vector: the record's, give or take its halves' error) */
	if (so->metric == GATEANN_METRIC_IP)
		r.norm = (float) (gateann_vector_norm(vec, so->meta.dims) + so->meta.record_error) *
			(1.0f + FLT_EPSILON);
	heap_push(&so->results, r);
}

/* Record rec's whole neighbor list into the frontier */
static void
expand_record(GateannScanOpaque so, const char *rec)
{
	int			nn = Min((int) GateannRecordHeader(rec)->nneighbors, so->meta.max_neighbors);

	memcpy(so->rowbuf, GateannRecordNeighbors(&so->meta, rec), sizeof(uint32) * nn);
	frontier_add_neighbors(so, so->rowbuf, nn);
}

/*
 * Page search: the other records on the page node id's record came from
 * cost no read.  One that may match, that the walk has not met, and whose
 * exact distance would place it in the list, is taken as if it had been
 * read: a result (after the exact filter check), its neighbors into the
 * frontier.  The rest are left for the walk to meet, or not.
 */
static void
page_search(GateannScanOpaque so, uint32 id, const char *page)
{
	const GateannMetaPageData *meta = &so->meta;
	uint32		first = id - id % meta->records_per_page;
	uint32		k;

	for (k = 0; k < meta->records_per_page; k++)
	{
		uint32		j = first + k;
		const char *rec = PageGetContents((Page) page) + (Size) k * meta->record_size;
		GateannFilterResult fr = GATEANN_FILTER_PASS;
		const float *vec;
		float		dist;

		if (j == id || j >= so->store->capacity || !gateann_store_has(so->store, j) ||
			gateann_reached(so->visited, j) || !node_may_match(so, j) ||
			GateannRecordHeader(rec)->node_id != j ||
			(GateannRecordHeader(rec)->flags & GATEANN_NODE_DELETED))
			continue;
		/* the distance first: most are too far, and their check is not needed */
		vec = gateann_record_vector(meta, rec, so->vecbuf);
		dist = gateann_internal_distance(so->metric, so->query, vec, meta->dims);
		so->stats.exact_distances++;
		if (gateann_candidate_rejects(so->frontier, so->fsize, so->L, on_pq_scale(so, dist)) ||
			!record_is_node(so, j, rec))
			continue;
		if (so->filtering)
		{
			fr = gateann_filter_record_check(so->filter, meta, rec);
			so->stats.filter_checks++;
			if (fr == GATEANN_FILTER_FAIL)
				continue;
		}
		(void) gateann_visit(so->visited, j);
		push_result(so, j, rec, vec, dist, fr);
		so->stats.page_search_results++;
		expand_record(so, rec);
	}
}

/* A read's exact distance: widen the reads in flight once the walk has converged */
static inline void
note_read_distance(GateannScanOpaque so, float dist)
{
	if (dist < so->best_read)
	{
		so->best_read = dist;
		so->stale_reads = 0;
	}
	else if (++so->stale_reads >= so->cur_width && so->cur_width < so->width)
	{
		so->cur_width = Min(so->cur_width * 2, so->width);
		so->stale_reads = 0;
	}
}

/* Apply a landed record: result set, then its neighbors into the frontier. */
static void
apply_record(IndexScanDesc scan, uint32 id, PendingRead *p)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;
	GateannNodeHeader *hdr;
	int			nn;
	instr_time	start,
				end;

	if (!p->valid)
	{
		/* not (validly) on disk: the buffer manager has the truth */
		gateann_read_intact_record(scan->indexRelation, &so->meta, id, p->record);
		so->rereads++;
		p->has_page = false;
	}
	/* compute_us: distances, verification, frontier work on landed records */
	if (so->track_timing)
		INSTR_TIME_SET_CURRENT(start);
	hdr = GateannRecordHeader(p->record);
	gateann_record_check_node(scan->indexRelation, hdr, id);
	so->stats.visited++;

	if (!(hdr->flags & GATEANN_NODE_DELETED))
	{
		GateannFilterResult fr = GATEANN_FILTER_PASS;
		float		dist = 0;
		float		exact;
		const float *vec = NULL;

		if (so->filtering)
		{
			/* exact verification against the record's copies */
			fr = gateann_filter_record_check(so->filter, &so->meta, p->record);
			so->stats.filter_checks++;
			if (fr == GATEANN_FILTER_FAIL && so->filter_mode == GATEANN_FILTER_MODE_GATE)
				so->stats.filter_false_positives++;
		}

		/*
		 * post (DiskANN/PipeANN behaviour) computes the exact distance of
		 * every node it reads; gate and early only of matching ones.
		 */
		if (fr != GATEANN_FILTER_FAIL || so->filter_mode == GATEANN_FILTER_MODE_POST)
		{
			vec = gateann_record_vector(&so->meta, p->record, so->vecbuf);
			dist = gateann_internal_distance(so->metric, so->query, vec, so->meta.dims);
			so->stats.exact_distances++;
			note_read_distance(so, dist);
			exact = on_pq_scale(so, dist);
			/* how much PQ overstated it: running mean and square (unreached_bound) */
			so->over_n++;
			so->over_sum += p->pq_dist - exact;
			so->over_sq += (double) (p->pq_dist - exact) * (p->pq_dist - exact);
		}
		if (fr != GATEANN_FILTER_FAIL)
		{
			push_result(so, id, p->record, vec, dist, fr);
			so->matched++;
		}
	}

	if (so->reading)
	{
		/* a memory walk's read: its whole list goes to the walk (memory_walk_feed) */
		nn = Min((int) hdr->nneighbors, so->meta.max_neighbors);
		if (so->read_nbrs_n + nn > so->read_nbrs_size)
		{
			so->read_nbrs_size = Max(so->read_nbrs_size * 2, so->read_nbrs_n + nn);
			so->read_nbrs = so->read_nbrs == NULL ?
				palloc(sizeof(uint32) * so->read_nbrs_size) :
				repalloc_huge(so->read_nbrs, sizeof(uint32) * so->read_nbrs_size);
		}
		memcpy(so->read_nbrs + so->read_nbrs_n, GateannRecordNeighbors(&so->meta, p->record),
			   sizeof(uint32) * nn);
		so->read_nbrs_n += nn;
	}
	else if (!so->prefilter)
		expand_record(so, p->record);
	if (p->has_page)
	{
		if (so->search_pages && !so->reading && !so->prefilter)
			page_search(so, id, p->page);
		gateann_page_stash_put(&so->stash, gateann_record_location(&so->meta, id).block,
							   &p->page, p->page_from_file);
	}
	if (so->track_timing)
	{
		INSTR_TIME_SET_CURRENT(end);
		INSTR_TIME_ACCUM_DIFF(so->compute_time, end, start);
	}
}

/* In-memory check: could node id be a result? (no false negatives) */
static bool
node_may_match(GateannScanOpaque so, uint32 id)
{
	if (gateann_store_is_deleted(so->store, id))
		return false;
	if (!so->filtering)
		return true;
	so->stats.filter_checks++;
	return gateann_filter_store_pass(so->filter,
									 (const uint8 *const *) so->store->filter_cols, id);
}

/*
 * Graph tunneling: cross nodes ids[0..n-1] in memory.  Their
 * first tunnel_neighbors neighbors from the neighbor store get PQ distances
 * and join the frontier; no read, no exact distance, never a result.
 *
 * Crossing several candidates at once (dispatch takes a run of consecutive
 * failing ones) overlaps their cache misses -- neighbor-store rows, then
 * the PQ codes of all their new neighbors -- which one at a time are paid
 * in series, and merges their neighbors into the frontier in one pass.
 */
static void
tunnel_run(GateannScanOpaque so, const uint32 *ids, int n)
{
	uint32	   *nbrs = so->rowbuf;
	int			total = 0;
	int			k;
	int64		before = so->stats.tunneled;

	for (k = 1; k < n; k++)
		gateann_store_prefetch_row(so->store, ids[k]);
	for (k = 0; k < n; k++)
	{
		int			c = gateann_store_copy_neighbors(so->store, ids[k], nbrs + total);

		total += Min(c, so->tunnel_neighbors);
	}
	frontier_add_neighbors(so, nbrs, total);
	so->stats.tunneled += n;
	so->stats.visited += n;	/* taken from the frontier, too */
	if ((before >> 10) != (so->stats.tunneled >> 10))
		CHECK_FOR_INTERRUPTS();
}

/* tunnel_us: a run of consecutive tunnels is timed as one (two clock reads) */
static inline void
tunnel_timer_stop(GateannScanOpaque so, bool *running, instr_time *start)
{
	instr_time	end;

	if (!*running)
		return;
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_ACCUM_DIFF(so->tunnel_time, end, *start);
	*running = false;
}

/* Nodes a graph walk has taken from its frontier: crossed in memory or read */
static inline double
walked_nodes(GateannScanOpaque so)
{
	return (double) so->stats.tunneled + so->expanded;
}

/*
 * Has a filtered walk gone far enough to tell whether it is stuck: at the
 * filter's overall rate it would have met GATEANN_GRAPH_MISS_EVIDENCE
 * matching nodes.
 */
static inline bool
walk_has_evidence(GateannScanOpaque so)
{
	return walked_nodes(so) * so->filter_fraction >= GATEANN_GRAPH_MISS_EVIDENCE;
}

/*
 * Matching nodes a walk met: read and verified; in a memory walk, the
 * candidates that passed the in-memory check (the pool)
 */
static inline double
walk_matched(GateannScanOpaque so)
{
	return so->memory_walk ? (double) so->pf.ncands : (double) so->matched;
}

static bool search_is_stuck(GateannScanOpaque so);
static bool prefilter_affordable(GateannScanOpaque so);

/*
 * io_method = auto: copy node id's record into dst if shared buffers hold
 * its pages (the copy is current and whole: no validation beyond its node
 * id and check), without a read.  False: read it.
 */
static bool
read_resident(GateannScanOpaque so, uint32 id, char *dst, char *page_dst)
{
	if (!so->read_resident ||
		!gateann_read_record_resident(so->io_index, &so->meta, id, dst, so->store->hints,
									  so->store->hdr->node_blocks, page_dst))
		return false;
	so->resident_pages += so->meta.pages_per_record;
	return record_is_node(so, id, dst);
}

/* The node a read_cached lookup is for */
typedef struct CachedLookup
{
	GateannScanOpaque so;
	uint32		id;
} CachedLookup;

/*
 * A copy from the record cache is used as a read of the file would be: if
 * its pages were as current as the file must be (their block marks), and it
 * is node id's record, intact.
 */
static bool
cached_copy_current(void *arg, const char *record, XLogRecPtr lsn)
{
	CachedLookup *l = (CachedLookup *) arg;
	GateannScanOpaque so = l->so;
	GateannRecordLoc loc = gateann_record_location(&so->meta, l->id);
	int			b;

	for (b = 0; b < so->meta.pages_per_record; b++)
		if (lsn < gateann_store_block_mark(so->store, loc.block + b - so->meta.node_start))
			return false;
	return record_is_node(so, l->id, record);
}

/* Copy node id's record into dst from the shared record cache; false: read it. */
static bool
read_cached(GateannScanOpaque so, uint32 id, char *dst)
{
	CachedLookup l = {so, id};

	if (!so->use_cache ||
		!gateann_record_cache_get(&so->cache_key, id, so->meta.record_size, dst,
								  cached_copy_current, &l))
		return false;
	so->stats.cache_hits++;
	return true;
}

/*
 * Cross the run of candidates run[0..n-1] in memory (tunnel_run), timed
 * (tunnel_us); frontier[next], likely crossed next, gets its row prefetched
 * so that its misses overlap ours.
 */
static void
cross_run(GateannScanOpaque so, const uint32 *run, int n, int next,
		  bool *timing, instr_time *start)
{
	if (next < so->fsize)
		gateann_store_prefetch_row(so->store, so->frontier[next].id);
	if (!*timing && so->track_timing)
	{
		INSTR_TIME_SET_CURRENT(*start);
		*timing = true;
	}
	tunnel_run(so, run, n);
}

/*
 * A memory walk's next run from frontier[i] on: up to tunnel_batch
 * unexpanded candidates, all crossed in memory; the ones that may match
 * wait in the pool for the read phase.  While a window counts matching
 * candidates, a run stops after one.  Returns the run's length; *next is
 * the candidate after it.
 */
static int
memory_walk_run(GateannScanOpaque so, int i, uint32 *run, int *next)
{
	int			n = 0;
	int			j;

	for (j = i; j < so->fsize && n < so->tunnel_batch; j++)
	{
		GateannCandidate *c = &so->frontier[j];
		bool		match;

		if (c->expanded)
			continue;
		c->expanded = 1;
		run[n++] = c->id;
		match = node_may_match(so, c->id);
		if (match)
			gateann_prefilter_add(&so->pf, c->id, c->dist);
		if (match && so->window_matches > 0)
		{
			j++;
			break;
		}
	}
	*next = j;
	return n;
}

/*
 * A gate walk's run of failing candidates from frontier[i] (which fails
 * the in-memory check) on: the next best while they fail too, up to
 * tunnel_batch.  The first that may match ends the run and is read next,
 * unchecked (known_match).  Returns the run's length; *next as above.
 */
static int
failing_run(GateannScanOpaque so, int i, uint32 *run, int *next)
{
	int			n = 0;
	int			j;

	so->frontier[i].expanded = 1;
	run[n++] = so->frontier[i].id;
	for (j = i + 1; j < so->fsize && n < so->tunnel_batch; j++)
	{
		GateannCandidate *c = &so->frontier[j];

		if (c->expanded)
			continue;
		if (node_may_match(so, c->id))
		{
			so->known_match = c->id;
			break;
		}
		c->expanded = 1;
		run[n++] = c->id;
	}
	*next = j;
	return n;
}

/*
 * Copy node id's record into dst from a page this scan has read (page
 * search), if that copy is as current as a read of the file must be (the
 * block's mark) and holds the node, intact.
 */
static bool
read_stashed(GateannScanOpaque so, uint32 id, char *dst)
{
	GateannRecordLoc loc;
	const char *page;
	bool		from_file = false;

	if (!so->keep_pages)
		return false;
	loc = gateann_record_location(&so->meta, id);
	page = gateann_page_stash_get(&so->stash, loc.block, &from_file);
	if (page == NULL ||
		PageGetLSN((Page) page) < gateann_store_block_mark(so->store,
														   loc.block - so->meta.node_start))
		return false;
	memcpy(dst, PageGetContents((Page) page) + loc.offset, so->meta.record_size);
	if (!record_is_node(so, id, dst))
		return false;
	so->stats.page_hits++;

	/*
	 * A record the scan needed, from a page of the file: the record cache
	 * keeps it as it keeps the records read (a later scan may not read
	 * its page).
	 */
	if (from_file && so->use_cache)
		gateann_record_cache_put(&so->cache_key, id, dst, so->meta.record_size,
								 PageGetLSN((Page) page));
	return true;
}

/*
 * Get frontier[i]'s record: from the record cache, a page the scan read
 * (which the cache then keeps; the cache is asked first so that it does
 * not keep a record twice) or shared buffers at once (applied in its
 * turn), else an asynchronous read of the file.
 * False when the read could not be submitted (the round waits for reads
 * in flight first).
 */
static bool
dispatch_read(GateannScanOpaque so, int i)
{
	uint32		id = so->frontier[i].id;
	PendingRead *p = &so->pending[so->next_seq % so->width];

	p->has_page = false;
	p->page_from_file = false;
	if (read_cached(so, id, p->record) || read_stashed(so, id, p->record))
	{
		/* the synchronous path: landed already, applied in its turn */
		p->landed = true;
		p->valid = true;
	}
	else if (read_resident(so, id, p->record, so->keep_pages ? p->page : NULL))
	{
		p->landed = true;
		p->valid = true;
		p->has_page = so->keep_pages;
	}
	else
	{
		GateannRecordLoc loc = gateann_record_location(&so->meta, id);

		if (!gateann_io_submit(so->io, loc.block, so->meta.pages_per_record,
							   so->next_seq))
			return false;
		p->landed = false;
		p->valid = false;
	}
	so->frontier[i].expanded = 1;
	so->expanded++;
	p->id = id;
	p->pq_dist = so->frontier[i].dist;
	so->next_seq++;
	return true;
}

/* Issue reads for the best undispatched candidates while W allows. */
static void
dispatch(GateannScanOpaque so)
{
	bool		timing = false;
	instr_time	tunnel_start;

	INSTR_TIME_SET_ZERO(tunnel_start);
	while (gateann_io_inflight(so->io) < so->cur_width &&
		   so->next_seq - so->head_seq < (uint64) so->cur_width)
	{
		int			i;
		uint32		id;
		uint32		run[GATEANN_TUNNEL_BATCH_MAX];

		for (i = so->first_unexpanded; i < so->fsize; i++)
		{
			if (!so->frontier[i].expanded)
				break;
			so->matches_before += so->frontier[i].may_match;
		}
		so->first_unexpanded = i;
		if (i >= so->fsize)
			break;
		if (so->window_matches > 0 && so->matches_before >= so->window_matches)
		{
			/* the round has its matching candidates: the rest wait */
			so->window_cut = true;
			break;
		}

		/*
		 * Whether a filtered walk is stuck is decided as soon as it has
		 * walked far enough to tell (search_is_stuck), not at the end of its
		 * round: a longer list (a larger L) walked on until it met matching
		 * nodes at about the filter's rate, in one part of the matching
		 * rows only, and a larger L gave a lower recall than a smaller one
		 * that pre-filtered.
		 */
		if (so->stuck_probe && walk_has_evidence(so))
		{
			so->stuck_probe = false;
			so->walk_abandoned = search_is_stuck(so) && prefilter_affordable(so);
		}
		if (so->walk_abandoned)
			break;
		if (so->expanded >= gateann_max_scan_tuples)
		{
			so->exhausted = true;
			so->budget_spent = true;
			break;
		}
		id = so->frontier[i].id;

		if (so->memory_walk && !so->reading)
		{
			int			next;
			int			n = memory_walk_run(so, i, run, &next);

			cross_run(so, run, n, next, &timing, &tunnel_start);
			continue;
		}

		/*
		 * GateANN's decision, before any I/O: a node that cannot be a
		 * result (fails the in-memory filter check, or is deleted) is
		 * crossed in memory through the neighbor store instead of read.
		 */
		if (so->filter_mode == GATEANN_FILTER_MODE_GATE && !so->prefilter &&
			id != so->known_match && !node_may_match(so, id))
		{
			int			next;
			int			n = failing_run(so, i, run, &next);

			cross_run(so, run, n, next, &timing, &tunnel_start);
			continue;
		}
		tunnel_timer_stop(so, &timing, &tunnel_start);
		if (!dispatch_read(so, i))
			break;
	}
	tunnel_timer_stop(so, &timing, &tunnel_start);
}

/*
 * After a round: how close a row a further round finds could be -- the
 * smallest PQ distance of a candidate it would start from (those pushed out
 * of the list, the entry points not visited yet, or the pre-filtered ones
 * not read yet), less what PQ
 * distances overstated exact ones among the nodes read so far (mean + 3
 * standard deviations: a few badly coded nodes must not hold every row
 * back); +infinity when there is no such candidate.  A result closer than
 * that is unlikely to be beaten by anything a further round finds.
 */
/*
 * The smallest PQ distance a graph walk that goes on would start from:
 * candidates pushed out of its list, the best one its window left
 * unexpanded, the entry points not visited yet.
 */
static float
walk_resume_bound(GateannScanOpaque so)
{
	float		bound = get_float4_infinity();
	int			i;
	const GateannCandidate *frontier = so->reading ? so->walk.frontier : so->frontier;
	int			fsize = so->reading ? so->walk.fsize : so->fsize;
	int			first = so->reading ? so->walk.first_unexpanded : so->first_unexpanded;
	bool		cut = so->reading ? so->walk.window_cut : so->window_cut;

	for (i = 0; i < so->evicted.size; i++)
		bound = Min(bound, so->evicted.items[i].dist);
	/* (the best candidate a window left unexpanded: the list is sorted) */
	if (cut && first < fsize)
		bound = Min(bound, frontier[first].dist);
	/* the entry points a walk that runs out goes on from (resume_search) */
	if (!so->all_entries_seeded)
	{
		for (i = 0; i < (int) Min(so->meta.nentries, GATEANN_MAX_ENTRIES); i++)
		{
			uint32		e = so->meta.entries[i];

			if (e < so->store->capacity && gateann_store_has(so->store, e) &&
				!gateann_reached(so->visited, e))
				bound = Min(bound, pq_distance(so, e));
		}
	}
	return bound;
}

static float
unreached_bound(GateannScanOpaque so)
{
	float		bound;
	double		slack = 0;

	if (so->over_n > 0)
	{
		double		mean = so->over_sum / so->over_n;
		double		var = Max(so->over_sq / so->over_n - mean * mean, 0.0);

		slack = Max(mean + 3 * sqrt(var), 0.0);
	}

	if (so->prefilter)
		return gateann_prefilter_next_dist(&so->pf) - slack;
	bound = walk_resume_bound(so);
	if (so->memory_walk)
		bound = Min(bound, gateann_prefilter_next_dist(&so->pf));
	return bound - slack;
}

/*
 * Run the pipeline until no undispatched candidate is left in the frontier
 * and every read has been applied (or the max_scan_tuples budget is spent).
 */
static void
search_round(IndexScanDesc scan)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;

	for (;;)
	{
		uint64		tag;
		BlockNumber blkno;
		char	   *data;
		bool		current;
		PendingRead *p;

		CHECK_FOR_INTERRUPTS();
		dispatch(so);
		if (so->head_seq == so->next_seq)
			break;				/* nothing dispatched, nothing pending */

		/* apply, in dispatch order, whatever has landed */
		p = &so->pending[so->head_seq % so->width];
		if (p->landed)
		{
			apply_record(scan, p->id, p);
			so->head_seq++;
			continue;
		}
		if (!gateann_io_next(so->io, true, &tag, &blkno, &data, &current))
			elog(ERROR, "gateann: read of node %u was lost", p->id);
		p = &so->pending[tag % so->width];
		p->landed = true;
		p->valid = data != NULL &&
			record_from_pages(so, p->id, blkno, data, current, p->record, &p->lsn);
		if (p->valid && so->keep_pages)
		{
			memcpy(p->page, data, BLCKSZ);
			p->has_page = true;
			p->page_from_file = !current;
		}
		/* a copy of what came from the files (not shared buffers) for later scans */
		if (p->valid && !current && so->use_cache)
			gateann_record_cache_put(&so->cache_key, p->id, p->record,
									 so->meta.record_size, p->lsn);
	}
	so->unreached = unreached_bound(so);
}

/*
 * The list size of the next round: twice the last one, within the budget.
 * A gate walk's window doubles too, but its list only as far as the window
 * needs: twice the positions that held the matches it has met, at the
 * density they came at (first_list_size sized the first list by the
 * filter's rate over the whole index; a filter that follows the query
 * matches far more densely near it, and every candidate merged into a list
 * moves the list's tail).  A list too short for its window ends the round
 * early, and the next one sizes it from what that round met.
 */
static void
grow_list(GateannScanOpaque so)
{
	int64		newL = Min((int64) so->L * 2, (int64) gateann_max_scan_tuples + so->L);

	if (so->window_matches > 0)
	{
		int64		window = so->window_matches * 2;

		if (so->matches_before > 0 && so->first_unexpanded > 0)
		{
			double		positions = (double) window * so->first_unexpanded / so->matches_before;

			newL = Min(newL, Max((int64) so->L, (int64) (2 * positions)));
		}
		so->window_matches = window;
	}
	if (newL > so->L)
		so->frontier = repalloc_huge(so->frontier, sizeof(GateannCandidate) * newL);
	so->L = (int) newL;
}

/*
 * Grow the list and fill it up again with the best evicted candidates:
 * chosen by selection, O(pool), and merged as one sorted batch (a resumed
 * search of a long list pulls back thousands of them).
 */
static void
grow_and_refill(GateannScanOpaque so)
{
	GateannScored *items = so->evicted.items;
	GateannCandidate *batch;
	int			need;
	int			i;

	grow_list(so);
	need = Min(so->L - so->fsize, so->evicted.size);
	if (need <= 0)
		return;
	(void) gateann_topk_sorted(items, so->evicted.size, need);
	batch = palloc(sizeof(GateannCandidate) * need);
	for (i = 0; i < need; i++)
	{
		batch[i].id = items[i].id;
		batch[i].dist = items[i].dist;
		batch[i].expanded = 0;
		batch[i].may_match = so->window_matches > 0 && node_may_match(so, items[i].id);
	}
	/* (taken out before the merge, which pushes nothing out: the batch fits) */
	so->evicted.size -= need;
	memmove(items, items + need, sizeof(GateannScored) * so->evicted.size);
	frontier_merge(so, batch, need);
	pfree(batch);
}

/*
 * Grow the list and pull back evicted candidates; false if none remain.
 * When none do, the walk has reached all it can from where it started:
 * it goes on from every entry point it has not visited (each live node is
 * reachable from one of them over the tunneling prefixes, see src/README), once.
 */
static bool
resume_search(GateannScanOpaque so)
{
	if (so->window_cut)
	{
		/* candidates are left beyond the window: a window twice as large */
		so->window_cut = false;
		grow_and_refill(so);
		return true;
	}
	if (!so->exhausted && so->evicted.size == 0 && !so->all_entries_seeded)
	{
		uint32		ids[GATEANN_MAX_ENTRIES];
		int			n = gateann_store_entries_by_distance(so->store, &so->meta, so->table, ids,
														  GATEANN_MAX_ENTRIES);
		int			i;

		so->all_entries_seeded = true;
		grow_list(so);
		for (i = 0; i < n; i++)
			seed_one(so, ids[i]);
		return so->first_unexpanded < so->fsize;
	}
	if (so->exhausted || so->evicted.size == 0)
	{
		so->exhausted = true;
		return false;
	}
	grow_and_refill(so);
	return true;
}

/*
 * Copies of one PQ distance a pre-filtered batch reads at most
 * (gateann_prefilter_take): enough for the rows strict_order tests first,
 * and a tenth of a larger batch, so that rounds over a table of copies of
 * one vector grow like any others.
 */
static inline int
prefilter_max_copies(GateannScanOpaque so)
{
	return Max(STRICT_FIRST_ROWS, so->L / 10);
}

/*
 * The next L candidates of the pool (pre-filtered, or a memory walk's),
 * best PQ distance first, become the frontier, all undispatched; returns
 * how many there were.
 */
static int
frontier_from_pool(GateannScanOpaque so)
{
	const GateannPrefilterCand *batch;
	int			n;
	int			i;

	n = gateann_prefilter_take(&so->pf, so->L, prefilter_max_copies(so), &batch);
	for (i = 0; i < n; i++)
	{
		so->frontier[i].dist = batch[i].dist;
		so->frontier[i].id = batch[i].id;
		so->frontier[i].expanded = 0;
		so->frontier[i].may_match = 1;	/* (each passed the in-memory check) */
	}
	so->fsize = n;
	so->first_unexpanded = 0;
	return n;
}

/*
 * Pre-filtering: the next L pre-filtered candidates, best PQ distance
 * first, become the frontier (already in order, all undispatched); false
 * when none are left.
 */
static bool
prefilter_load(GateannScanOpaque so)
{
	if (frontier_from_pool(so) == 0)
	{
		so->exhausted = true;
		return false;
	}
	return true;
}

/* The next, twice larger batch of pre-filtered candidates */
static bool
prefilter_resume(GateannScanOpaque so)
{
	if (so->exhausted)
		return false;
	grow_list(so);
	return prefilter_load(so);
}

/*
 * A memory walk's read phase: put the walk's list aside and make the next
 * read_batch candidates of the pool, best PQ distance first, the frontier
 * (all undispatched); false when the pool has none left.
 */
static bool
read_phase_begin(GateannScanOpaque so, int count)
{
	int			n;

	if (!so->reading)
	{
		so->walk.frontier = so->frontier;
		so->walk.fsize = so->fsize;
		so->walk.L = so->L;
		so->walk.first_unexpanded = so->first_unexpanded;
		so->walk.window_matches = so->window_matches;
		so->walk.matches_before = so->matches_before;
		so->walk.window_cut = so->window_cut;
		so->reading = true;
	}
	count = Max(count, 1);
	if (so->read_list_size < count)
	{
		so->read_list = so->read_list == NULL ?
			palloc(sizeof(GateannCandidate) * count) :
			repalloc_huge(so->read_list, sizeof(GateannCandidate) * count);
		so->read_list_size = count;
	}
	so->frontier = so->read_list;
	so->L = count;
	so->cur_width = so->width;	/* (known candidates, as pre-filtering's) */
	so->window_matches = 0;
	so->matches_before = 0;
	so->window_cut = false;
	n = frontier_from_pool(so);
	if (n > 0)
		so->read_worst = Max(so->read_worst, so->frontier[n - 1].dist);
	return n > 0;
}

/* Back to the walk's list */
static void
read_phase_end(GateannScanOpaque so)
{
	if (!so->reading)
		return;
	so->frontier = so->walk.frontier;
	so->fsize = so->walk.fsize;
	so->L = so->walk.L;
	so->first_unexpanded = so->walk.first_unexpanded;
	so->window_matches = so->walk.window_matches;
	so->matches_before = so->walk.matches_before;
	so->window_cut = so->walk.window_cut;
	so->reading = false;
}

/* Nothing left: the walk cannot go on and the pool is read (or the budget is spent) */
static void
memory_walk_set_exhausted(GateannScanOpaque so)
{
	so->exhausted = so->budget_spent ||
		(so->walk_done && so->pf.taken >= so->pf.ncands);
}

/* Rounds of walking on from the records read that a first round runs at most */
#define MEMORY_WALK_FEEDS	4

/*
 * Back to the walk: the neighbors of the records read join its list (PQ
 * distances; the ones seen before are skipped), and it walks on.  False when
 * none joined (nothing to walk).
 */
static bool
memory_walk_feed(IndexScanDesc scan)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;
	int64		off;

	read_phase_end(so);
	/* (frontier_add_neighbors takes at most batch_size at once) */
	for (off = 0; off < so->read_nbrs_n; off += so->batch_size)
		frontier_add_neighbors(so, so->read_nbrs + off,
							   (int) Min((int64) so->batch_size, so->read_nbrs_n - off));
	so->read_nbrs_n = 0;
	if (so->first_unexpanded >= so->fsize)
		return false;
	search_round(scan);
	return true;
}

/*
 * A memory walk's first round: walk with the list, then read the best
 * read_batch candidates it met.
 */
static void
memory_walk_first_round(IndexScanDesc scan)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;
	int			i;

	search_round(scan);
	if (so->walk_abandoned)
		return;
	if (read_phase_begin(so, so->read_batch))
		search_round(scan);
	/*
	 * The records read have whole neighbor lists, where the walk had the
	 * prefixes: walk on from them, and read what it finds that the first
	 * batch would have held (closer than the farthest read).  Prefixes
	 * full of copies of one vector trap a walk that never reads a list.
	 */
	for (i = 0; i < MEMORY_WALK_FEEDS && !so->walk_abandoned; i++)
	{
		int64		better;

		if (!memory_walk_feed(scan))
			break;
		better = gateann_prefilter_count_below(&so->pf, so->read_worst);
		if (better == 0 || !read_phase_begin(so, (int) Min(better, (int64) so->read_batch)))
			break;
		search_round(scan);
	}
	memory_walk_set_exhausted(so);
}

/*
 * A memory walk's next round: read the next, twice larger batch of the pool
 * while its best candidate is no farther than where the walk would go on
 * from; else walk on first (a longer list), then read.
 */
static bool
memory_walk_next_round(IndexScanDesc scan)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;
	float		pool_next = gateann_prefilter_next_dist(&so->pf);
	bool		progress = false;

	if (so->budget_spent)
		return false;
	/* the lists of the last records read first (as in the first round) */
	if (memory_walk_feed(scan))
	{
		progress = true;
		pool_next = gateann_prefilter_next_dist(&so->pf);
	}
	/* (an empty pool is +inf, and so may be the walk's bound: walk then) */
	if (!so->walk_done && (isinf(pool_next) || pool_next > walk_resume_bound(so)))
	{
		if (resume_search(so))
		{
			search_round(scan);
			progress = true;	/* (resume_search left a candidate to cross) */
		}
		else
			so->walk_done = true;
		so->exhausted = false;
	}
	if (!so->budget_spent)
	{
		so->read_batch = (int) Min((int64) so->read_batch * 2, (int64) gateann_max_scan_tuples);
		if (read_phase_begin(so, so->read_batch))
		{
			search_round(scan);
			progress = true;
		}
	}
	memory_walk_set_exhausted(so);
	if (!progress)
		so->exhausted = true;	/* (never loop without crossing or reading a node) */
	return !so->exhausted || so->results.size > 0;
}

/*
 * Pre-filter instead of walking the graph?  Only in gate mode (post and
 * early are the papers' baselines of a graph search), and only when a
 * sample of the filter store says few nodes match: then a graph walk
 * crosses about 1/s nodes per match and, when the matching nodes lie away
 * from the query, may not reach them at all, while the pass over the
 * filter store costs the same for any filter.
 */
static bool
choose_prefilter(GateannScanOpaque so)
{
	if (!so->filtering || so->filter_mode != GATEANN_FILTER_MODE_GATE ||
		gateann_prefilter_selectivity <= 0.0)
		return false;
	return so->filter_fraction <= gateann_prefilter_selectivity;
}

/*
 * The list size of a search's first round.  L counts candidates that may
 * match: a filter passed by a share s of the nodes gets a list of L / s
 * (at most GATEANN_LIST_SCALE_MAX times L), so that the round reaches about
 * L matching nodes, as an unfiltered one reaches L nodes.  With a list of L
 * alone, a 5 % filter left a round about 5 matching nodes among the L
 * nearest: fewer than a LIMIT 10 wants, and not its nearest matches.  In
 * gate mode the others cost no read (they are crossed in memory).
 *
 * The sampled share is the whole index's; near a query it may be far
 * higher (a filter that follows the query: a tenant's own cluster), and a
 * list of L / s candidates that nearly all match costs L / s reads where an
 * unfiltered walk reads L (5 % filters: 10x the reads, same recall).  So a
 * gate walk's round counts, in list order, the candidates that pass the
 * in-memory check and stops expanding at the L-th (window_matches, doubled
 * with the list): the list of L / s is room for a neighbourhood where few
 * match, the window is what the round reads.
 */
static int
first_list_size(GateannScanOpaque so)
{
	double		L = Max(gateann_search_list_size, 1);
	double		scale = 1.0;

	if (so->filtering)
		scale = so->filter_fraction > 0.0 ? 1.0 / so->filter_fraction : GATEANN_LIST_SCALE_MAX;
	scale = Min(Max(scale, 1.0), GATEANN_LIST_SCALE_MAX);
	return (int) Min(L * scale, (double) GATEANN_MAX_LIST_SIZE);
}

/*
 * After the first round of a filtered graph search (nothing returned yet):
 * is it stuck -- did the walk meet matching nodes far more rarely than the
 * filter matches over the whole index?  Then they lie away from the query
 * (filter values that follow the vector clusters, and a query asking for
 * another cluster's), where a walk toward the query does not lead, however
 * long the list.  A short walk proves nothing (walk_has_evidence); a long
 * enough one is stuck when it met under 1/GATEANN_GRAPH_MISS_FACTOR of the
 * matches the filter's rate predicts.
 */
static bool
search_is_stuck(GateannScanOpaque so)
{
	double		walked = walked_nodes(so);
	double		matched = walk_matched(so);

	if (!so->filtering || !walk_has_evidence(so))
		return false;			/* (evidence implies walked > 0) */
	/* reads still in flight passed the in-memory check in gate mode: nearly all match */
	if (so->filter_mode == GATEANN_FILTER_MODE_GATE && !so->memory_walk)
		matched += (double) (so->next_seq - so->head_seq);
	return matched / walked * GATEANN_GRAPH_MISS_FACTOR < so->filter_fraction;
}

/*
 * Recover a stuck search by pre-filtering?  In gate mode (post and early
 * are the papers' baselines of a graph search), when its PQ distances (one
 * per matching node) cost no more than about the walk it would take to
 * read L matching nodes at the rate seen (a crossed node costs R_max PQ
 * distances and a random row of the neighbor store).
 */
static bool
prefilter_affordable(GateannScanOpaque so)
{
	double		walked = walked_nodes(so);
	double		rate = walk_matched(so) / walked;

	if (so->filter_mode != GATEANN_FILTER_MODE_GATE || gateann_prefilter_selectivity <= 0.0)
		return false;
	/* (no match at all yet: at least one would have come next) */
	return so->filter_fraction * so->meta.nnodes <=
		GATEANN_PREFILTER_COST_RATIO * Max(gateann_search_list_size, 1) / Max(rate, 1.0 / walked);
}

/*
 * Search by pre-filtering from here on: collect the candidates (every
 * node is checked in memory) and run the first batch.  `strategy` is what
 * gateann_last_scan() reports.
 */
static void
start_prefilter(IndexScanDesc scan, const char *strategy)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;

	so->prefilter = true;
	so->stats.strategy = strategy;
	/* the candidates are known, not met hop by hop: all reads at once */
	so->cur_width = so->width;
	/* (every pre-filtered candidate passes the check: no window) */
	so->window_matches = 0;
	so->window_cut = false;
	so->matches_before = 0;
	/* every candidate passes the filter store: a batch of L of them */
	so->L = Min(so->L, Max(gateann_search_list_size, 1));
	gateann_prefilter_collect(&so->pf, so->filter, so->store, so->table);
	so->stats.filter_checks += so->store->capacity;
	so->stats.pq_distances += so->pf.ncands;
	if (prefilter_load(so))
		search_round(scan);
}

/* Drop a graph walk's results (none returned yet) and leftovers; pre-filter */
static void
recover_by_prefilter(IndexScanDesc scan)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;

	read_phase_end(so);
	so->memory_walk = false;
	so->walk_abandoned = false;
	so->stats.recoveries++;
	so->results.size = 0;
	so->evicted.size = 0;
	so->exhausted = false;
	so->window_cut = false;
	start_prefilter(scan, "graph, then prefilter");
}

/*
 * After a round of a filtered graph walk that has returned no row yet: is it
 * stuck, and is pre-filtering affordable?  Then go on by pre-filtering.
 * The first round's dispatch decides as soon as the walk is long enough to
 * tell (walk_has_evidence); a round that ends sooner -- a small L -- is
 * judged here, before a wider one crosses ever more of the graph (at L = 20
 * on 30K rows such walks crossed every node).  A round that met no matching
 * node at all is evidence enough.
 */
static bool
recover_stuck_walk(IndexScanDesc scan)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;
	bool		stuck;

	if (so->prefilter || !so->filtering || so->filter_mode != GATEANN_FILTER_MODE_GATE ||
		so->stats.returned > 0 || walked_nodes(so) == 0)
		return false;
	stuck = walk_matched(so) == 0 ? true : search_is_stuck(so);
	if (!stuck || !prefilter_affordable(so))
		return false;
	recover_by_prefilter(scan);
	return true;
}

/*
 * The search's next round (false when it has nothing left): a stuck walk
 * goes on by pre-filtering, others resume with a longer list.
 */
static bool
next_round(IndexScanDesc scan)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;

	if (recover_stuck_walk(scan))
		return true;			/* (its first batch has run) */
	if (so->memory_walk)
		return memory_walk_next_round(scan);
	if (!(so->prefilter ? prefilter_resume(so) : resume_search(so)))
		return false;
	search_round(scan);
	return true;
}

/*
 * Start the frontier from the entry points nearest the query (by PQ
 * distance), so that the walk begins in the query's region, wherever that
 * is.  A filtered gate search also starts from the nearest entry points
 * that pass the in-memory check: when the filter's rows lie away from the
 * query, that is where the walk has to get to.
 */
static void
seed_frontier(GateannScanOpaque so)
{
	uint32		ids[GATEANN_MAX_ENTRIES];
	bool		gate = so->filtering && so->filter_mode == GATEANN_FILTER_MODE_GATE;
	int			nseeds = SCAN_ENTRY_SEEDS;
	/* (gate: the nearest matching ones too, so all in order) */
	int			n = gateann_store_entries_by_distance(so->store, &so->meta, so->table, ids,
													  gate ? GATEANN_MAX_ENTRIES : nseeds);
	int			i,
				matching;

	seed_one(so, so->meta.entry_point);
	for (i = 0; i < n && i < nseeds; i++)
		seed_one(so, ids[i]);
	if (!gate)
		return;
	for (i = nseeds, matching = 0; i < n && matching < nseeds; i++)
	{
		if (node_may_match(so, ids[i]))
		{
			seed_one(so, ids[i]);
			matching++;
		}
	}
}

/* Every per-search field to its state before the search (rescan resets the rest) */
static void
search_state_reset(GateannScanOpaque so)
{
	so->initialized = true;
	so->track_timing = gateann_track_timing;
	INSTR_TIME_SET_ZERO(so->compute_time);
	INSTR_TIME_SET_ZERO(so->tunnel_time);
	so->no_results = true;
	so->exhausted = true;
	so->iterative = gateann_iterative_scan;
	so->budget_spent = false;
	so->strict_window = 0;
	so->max_bound = -FLT_MAX;
	so->passed = -FLT_MAX;
	so->unpassed = NULL;
	so->nunpassed = 0;
	so->unpassed_size = 0;
	so->last_untested = false;
	so->lookahead_taken = false;
	so->strict_scratch = NULL;
	so->strict_scratch_size = 0;
	so->over_n = 0;
	so->over_sum = so->over_sq = 0;
	so->next_seq = so->head_seq = 0;
	so->rereads = 0;
	so->all_entries_seeded = false;
	so->matched = 0;
	so->stuck_probe = false;
	so->walk_abandoned = false;
	so->filter_fraction = 1.0;
	so->fsize = 0;
	so->first_unexpanded = 0;
	so->window_matches = 0;
	so->matches_before = 0;
	so->window_cut = false;
	so->expanded = 0;
	so->prefilter = false;
	so->memory_walk = false;
	so->reading = false;
	so->walk_done = false;
	so->read_list = NULL;
	so->read_list_size = 0;
	so->read_worst = -get_float4_infinity();
	so->read_nbrs = NULL;
	so->read_nbrs_n = 0;
	so->read_nbrs_size = 0;
	memset(&so->tail, 0, sizeof(so->tail));
	so->search_done = false;
}

/*
 * Step 1: the metapage and the query vector.  False when the scan returns
 * no rows (an empty index).  A query that has no distance to any row (NULL,
 * or zero under cosine), or an index that has seen no vector, leaves
 * query_has_distance false: no search, only rows without a distance.
 */
static bool
search_read_query(IndexScanDesc scan)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;
	Relation	index = scan->indexRelation;
	ScanKey		orderby;
	int			dims;

	if (!IsMVCCSnapshot(scan->xs_snapshot))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gateann index scans require an MVCC snapshot")));

	if (scan->numberOfOrderBys == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gateann index scans need ORDER BY a distance to a vector"),
				 errhint("Use ORDER BY column <-> value LIMIT k.")));

	orderby = &scan->orderByData[0];
	gateann_read_meta(index, &so->meta);

	/*
	 * The executor checks each row's distance against the value the index
	 * gives (xs_recheckorderby): an index ranking by another metric than
	 * the ORDER BY operator's (a damaged metapage) would fail that check
	 * with an internal error.  The ordering operator's strategy number is
	 * the metric of its operator class (gateann_index_metric).
	 */
	if (so->meta.metric != orderby->sk_strategy)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gateann index \"%s\" is damaged: its metapage gives metric %s, its operator class orders by %s",
						RelationGetRelationName(index), gateann_metric_name(so->meta.metric),
						gateann_metric_name(orderby->sk_strategy)),
				 errhint("REINDEX the index.")));
	so->metric = (GateannMetric) so->meta.metric;
	so->query_has_distance = false;
	so->query_null = (orderby->sk_flags & SK_ISNULL) != 0;
	if (so->meta.nnodes == 0)
		return false;
	if (so->query_null)
		return true;

	gateann_vector_reader_init(&so->reader, index);
	so->query = gateann_vector_from_datum(&so->reader, orderby->sk_argument, &dims);
	if (so->meta.dims == 0)
		return true;			/* tail records only: none has a distance */
	if (dims != so->meta.dims)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("query vector has %d dimensions, index \"%s\" has %d",
						dims, RelationGetRelationName(index), so->meta.dims)));
	if (gateann_first_unindexable(so->query, dims, so->metric) >= 0)
		gateann_report_unindexable("query vector", so->query,
								   gateann_first_unindexable(so->query, dims, so->metric));
	so->vecbuf = palloc(sizeof(float) * dims);
	/* a zero query has no cosine distance to anything (NaN) */
	so->query_has_distance = !(so->metric == GATEANN_METRIC_COSINE &&
							   !gateann_normalize(so->query, dims));
	if (so->metric == GATEANN_METRIC_IP)
		so->query_norm = gateann_vector_norm(so->query, dims);
	/* what halves can move a distance by: |x - half(x)|, times |q| for inner product */
	so->vector_error = (double) so->meta.record_error * (1.0 + FLT_EPSILON);
	if (so->metric == GATEANN_METRIC_IP)
		so->vector_error *= so->query_norm * (1.0 + FLT_EPSILON);
	return true;
}

/*
 * The classes of rows without a distance this scan returns (tail.h), as
 * the query and the keys on the vector column allow.
 */
static int
tail_classes(GateannScanOpaque so)
{
	int			classes = GATEANN_TAIL_NULL;

	if (so->metric == GATEANN_METRIC_COSINE)
		classes |= GATEANN_TAIL_NAN;
	if (!so->query_has_distance)
		classes |= GATEANN_TAIL_GRAPH;
	switch (gateann_filter_vector_nulls(so->filter))
	{
		case GATEANN_VECTOR_ANY:
			break;
		case GATEANN_VECTOR_NOT_NULL:
			classes &= ~GATEANN_TAIL_NULL;
			break;
		case GATEANN_VECTOR_NULL_ONLY:
			classes &= GATEANN_TAIL_NULL;
			break;
		case GATEANN_VECTOR_NONE:
			classes = 0;
			break;
	}
	return classes;
}

/*
 * Step 2: the in-memory stores, and the scan keys compiled against their
 * dictionaries.  False when the filter provably matches no row.
 */
static bool
search_compile_filter(IndexScanDesc scan)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;
	Relation	index = scan->indexRelation;
	bool		never;

	so->store = gateann_store_get(index, &so->meta);
	so->filter = gateann_filter_compile(index, &so->meta, scan->keyData,
										scan->numberOfKeys, so->store->dict, &never);
	if (never)
		return false;
	so->filtering = gateann_filter_active(so->filter);
	/* no node has a value the filter wants: no search at all */
	if (so->filtering &&
		gateann_filter_matches_nothing(so->filter,
									   (const uint8 *const *) so->store->filter_cols,
									   so->store->capacity))
		return false;
	so->need_recheck = gateann_filter_needs_recheck(so->filter);
	so->filter_mode = gateann_filter_mode;
	so->tunnel_neighbors = so->store->tunnel_neighbors;
	if (gateann_tunnel_neighbors_guc > 0)
		so->tunnel_neighbors = Min(so->tunnel_neighbors, gateann_tunnel_neighbors_guc);
	if (so->filtering)
		so->filter_fraction = gateann_prefilter_estimate(so->filter, so->store, so->meta.nnodes,
														 GATEANN_PREFILTER_SAMPLE,
														 GATEANN_PREFILTER_SAMPLE_PASS);
	return true;
}

/* Step 3: the query's PQ distance table, and the reader of the records */
static void
search_open(GateannScanOpaque so, Relation index)
{
	int			i;
	bool		cacheable;

	so->table = palloc(sizeof(float) * gateann_pq_table_floats(so->meta.pq_subspaces));
	/*
	 * Cosine compares unit vectors, where squared L2 orders exactly like the
	 * cosine distance; an inner-product table would ignore that the coded
	 * vectors are not of unit length, and rank by their length as much as
	 * by their direction.
	 */
	so->pq_offset = (float) gateann_pq_distance_table(&so->store->pq, so->query,
													  so->metric == GATEANN_METRIC_IP ?
													  GATEANN_PQ_IP : GATEANN_PQ_L2,
													  so->table);
	/*
	 * The files may lag shared buffers; a scan reads them directly only
	 * where the marks say which blocks do (store.h): a shared store of a
	 * WAL-logged index on a primary.  A hot standby replays changes without
	 * telling the stores, a private copy knows only its own backend's
	 * writes, and pages of an index without WAL have no LSN to compare:
	 * there, read through the buffer manager (writers then need not force
	 * their pages out under the buffer lock).
	 *
	 * An index whose node pages take at most a quarter of shared buffers is
	 * read into them (io.h, cacheable): it stays in memory; a larger one
	 * would only push other data out, and is read with O_DIRECT.
	 */
	cacheable = (double) so->meta.node_pages <= (double) NBuffers / 4;
	so->io = gateann_io_open(index, so->meta.pages_per_record,
							 RecoveryInProgress() || !so->store->shared ||
							 !RelationNeedsWAL(index), cacheable);
	/*
	 * Reads that all complete at once overlap nothing: one at a time, each
	 * applied before the next candidate is chosen, as a best-first search
	 * in memory does (fewer nodes read at the same L: 101 against 113 at
	 * L = 50 on 100K x 128, 20 % less time).  The choice follows from the
	 * index's size and shared buffers, not from timing: a scan's rows do
	 * not depend on what the cache held.
	 */
	so->width = gateann_io_synchronous(so->io) ? 1 : gateann_io_width_of(so->io);
	/*
	 * (Not for a filtered walk: it reads only matching nodes, each hop
	 * crossed in memory, and read fewer (4 %) but answered slower (4-11 %)
	 * with it: bench/RESULTS.md.)
	 */
	so->cur_width = gateann_dynamic_width && !so->filtering ?
		Min(so->width, GATEANN_FIRST_WIDTH) : so->width;
	so->stale_reads = 0;
	so->best_read = get_float4_infinity();
	so->read_resident = gateann_io_tiered(so->io);
	/*
	 * The record cache holds copies of file reads, checked against the
	 * marks: only where those apply (above), and only for auto, the method
	 * that takes what memory holds (the others read the files); not for
	 * an index that warms up into shared buffers (they hold its records).
	 */
	so->use_cache = gateann_record_cache_usable() && so->read_resident &&
		!gateann_io_synchronous(so->io);
	so->cache_key.build_id = so->meta.build_id;
	so->cache_key.dboid = GATEANN_REL_DATABASE(index);
	so->cache_key.relfilenumber = GATEANN_REL_FILENUMBER(index);
	so->io_index = index;
	so->resident_pages = 0;
	/*
	 * gateann.page_search, where a page holds several records.  Keeping
	 * the pages read (reuse) never changes the walk: a record taken from
	 * a kept page is the one a read gives.  auto keeps them for an index
	 * too large to stay in shared buffers, whose reads cost I/O; for one
	 * that stays there a read is a copy from memory, cheaper than keeping
	 * its page (0-15 % more time per query, bench/RESULTS.md).  Like W,
	 * the choice follows from the index's size, never from what a cache
	 * holds.  Searching the pages' other records (on) changes the walk by
	 * which records came with a page (one from the record cache does
	 * not): asked for, never chosen.
	 */
	so->search_pages = so->meta.records_per_page > 1 &&
		gateann_page_search == GATEANN_PAGE_SEARCH_ON;
	so->keep_pages = so->search_pages ||
		(so->meta.records_per_page > 1 &&
		 (gateann_page_search == GATEANN_PAGE_SEARCH_REUSE ||
		  (gateann_page_search == GATEANN_PAGE_SEARCH_AUTO && !cacheable)));
	so->pending = palloc0(sizeof(PendingRead) * so->width);
	for (i = 0; i < so->width; i++)
	{
		so->pending[i].record = palloc(so->meta.record_size);
		if (so->keep_pages)
			so->pending[i].page = palloc(BLCKSZ);
	}
	if (so->keep_pages)
		gateann_page_stash_init(&so->stash, GATEANN_PAGE_STASH_PAGES);
	so->L = first_list_size(so);
	so->frontier = palloc(sizeof(GateannCandidate) * so->L);
}

/*
 * Step 4, a graph search: its working memory, the entry points, the first
 * round; a filtered walk that turns out stuck continues by pre-filtering.
 */
static void
search_graph(IndexScanDesc scan)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;
	int			maxrow;

	so->stats.strategy = "graph";
	/* ids up to the store's capacity: nodes inserted since meta was read */
	so->visited = palloc_extended(((Size) so->store->capacity + 7) / 8,
								  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	/* tunnel_batch neighbor-store rows, or a read record's full list; and their entries */
	maxrow = Max(Max(so->store->tunnel_neighbors, so->meta.max_neighbors), 1);
	so->tunnel_batch = gateann_tunnel_batch;
	so->known_match = InvalidNodeId;
	so->batch_size = maxrow * so->tunnel_batch;
	so->rowbuf = palloc(sizeof(uint32) * so->batch_size);
	so->batch = palloc(sizeof(GateannCandidate) * so->batch_size);

	/* a gate walk's list counts the candidates that may match (first_list_size) */
	if (so->filtering && so->filter_mode == GATEANN_FILTER_MODE_GATE &&
		so->L > Max(gateann_search_list_size, 1))
		so->window_matches = Max(gateann_search_list_size, 1);
	seed_frontier(so);
	so->stuck_probe = so->filtering && so->filter_mode == GATEANN_FILTER_MODE_GATE &&
		gateann_prefilter_selectivity > 0.0;
	so->memory_walk = gateann_read_list_size > 0 &&
		so->filter_mode == GATEANN_FILTER_MODE_GATE;
	if (so->memory_walk)
	{
		so->stats.strategy = "memory walk";
		gateann_prefilter_init(&so->pf);
		/* (and the row after them, which the executor fetches: gettuple) */
		so->read_batch = gateann_read_list_size + 1;
		memory_walk_first_round(scan);
	}
	else
		search_round(scan);
	so->stuck_probe = false;
	if (so->walk_abandoned)
		recover_by_prefilter(scan);
	else
		(void) recover_stuck_walk(scan);
}

/*
 * The first gettuple of a scan (or of a rescan): read the query, compile
 * the filter, open the reader, then pre-filter or search the graph.
 */
static void
begin_search(IndexScanDesc scan)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;

	search_state_reset(so);
	if (!search_read_query(scan) || !search_compile_filter(scan) ||
		gateann_filter_vector_nulls(so->filter) == GATEANN_VECTOR_NONE)
		return;
	gateann_tail_begin(&so->tail, tail_classes(so), &so->meta);
	/* no distance to rank by, or only rows with a NULL vector wanted: no search */
	if (!so->query_has_distance ||
		gateann_filter_vector_nulls(so->filter) == GATEANN_VECTOR_NULL_ONLY)
	{
		so->stats.strategy = "no distance";
		so->search_done = true;
		return;
	}
	search_open(so, scan->indexRelation);
	so->no_results = false;
	so->exhausted = false;
	if (choose_prefilter(so))
		start_prefilter(scan, "prefilter");
	else
		search_graph(scan);
}

/* Counters of a scan that has not searched yet */
static void
scan_stats_reset(GateannScanOpaque so)
{
	memset(&so->stats, 0, sizeof(GateannScanStats));
	so->stats.io_method = "none";
	so->stats.strategy = "none";
}

IndexScanDesc
gateann_beginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	GateannScanOpaque so = palloc0(sizeof(GateannScanOpaqueData));

	so->cxt = AllocSetContextCreate(CurrentMemoryContext, "gateann scan",
									ALLOCSET_DEFAULT_SIZES);
	scan_stats_reset(so);
	scan->opaque = so;
	if (norderbys > 0)
	{
		scan->xs_orderbyvals = palloc0(sizeof(Datum) * norderbys);
		scan->xs_orderbynulls = palloc(sizeof(bool) * norderbys);
		memset(scan->xs_orderbynulls, true, sizeof(bool) * norderbys);
	}
	return scan;
}

void
gateann_rescan(IndexScanDesc scan, ScanKey keys, int nkeys,
			   ScanKey orderbys, int norderbys)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;

	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	if (orderbys && scan->numberOfOrderBys > 0)
		memmove(scan->orderByData, orderbys, scan->numberOfOrderBys * sizeof(ScanKeyData));

	if (so->io)
	{
		gateann_io_close(so->io);
		so->io = NULL;
	}
	MemoryContextReset(so->cxt);
	so->initialized = false;
	so->store = NULL;
	memset(&so->evicted, 0, sizeof(EvictedPool));
	memset(&so->results, 0, sizeof(MinHeap));

	scan_stats_reset(so);
}

/*
 * The executor wants another row, and the scan stopped at
 * gateann.max_scan_tuples: say so, once per statement (a join rescans the
 * index for every outer row), and count it.
 */
static void
report_budget_spent(IndexScanDesc scan)
{
	static TimestampTz last_statement = 0;
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;
	bool		few_matched;

	so->stats.budget_exhausted = true;
	if (GetCurrentStatementStartTimestamp() == last_statement)
		return;
	last_statement = GetCurrentStatementStartTimestamp();
	/*
	 * What made the scan read that far: few of the nodes it read matched
	 * the index conditions, or the executor wanted more rows than matched
	 * them -- a LIMIT that large, or rows its own conditions removed (the
	 * scan cannot see those; EXPLAIN shows them as a Filter).
	 */
	few_matched = so->filtering && so->matched * 10 < so->expanded;
	ereport(NOTICE,
			(errmsg_plural("gateann index \"%s\": the scan stopped at gateann.max_scan_tuples (%d nodes) after passing %lld row to the executor",
						   "gateann index \"%s\": the scan stopped at gateann.max_scan_tuples (%d nodes) after passing %lld rows to the executor",
						   (unsigned long) so->stats.returned,
						   RelationGetRelationName(scan->indexRelation), gateann_max_scan_tuples,
						   (long long) so->stats.returned),
			 few_matched ?
			 errdetail("Of the %lld nodes it visited, %lld matched the index conditions.",
					   (long long) so->expanded, (long long) so->matched) :
			 errdetail("Conditions the index does not check (a Filter in EXPLAIN) may have removed some of them before the query saw them."),
			 few_matched ?
			 errhint("Few rows near the query match the index conditions: raise gateann.max_scan_tuples to search further.") :
			 errhint("The query wanted more rows than the index returned: a LIMIT beyond them, or a condition the index does not check (a Filter in EXPLAIN) that removed rows.  Raise gateann.max_scan_tuples, or index the columns of such a condition.")));
}

/* The counters kept outside so->stats: I/O (io.c) and the times measured */
static void
collect_stats(GateannScanOpaque so)
{
	so->stats.compute_us = (int64) INSTR_TIME_GET_MICROSEC(so->compute_time);
	so->stats.tunnel_us = (int64) INSTR_TIME_GET_MICROSEC(so->tunnel_time);
	if (so->io == NULL)
		return;
	so->stats.reads = gateann_io_pages_read(so->io);
	so->stats.resident_hits = gateann_io_resident_pages(so->io) + so->resident_pages;
	so->stats.page_cache_hits = gateann_io_cached_pages(so->io);
	so->stats.buffer_hits = gateann_io_buffer_pages(so->io) +
		so->rereads * so->meta.pages_per_record;
	so->stats.io_wait_us = gateann_io_wait_us(so->io);
	so->stats.io_method = gateann_io_method_name(so->io);
	so->stats.io_direct = gateann_io_direct(so->io);
}

/*
 * strict_order's tests: could a further round find a row that belongs before
 * one the scan returns?  A round that runs after rows were returned can only
 * skip the closer rows it finds, while one that runs before returns them.
 *
 * Each row: a row that could be beaten (could_be_beaten) is returned at once
 * but with a lower distance bound, the least distance a row not found yet
 * can have (unreached_distance); the executor, which orders rows by the
 * operator's distance and holds a row back until the index has returned a
 * row whose bound is at least that distance (gettuple), so returns none
 * beyond that bound; the further round runs when the next row is asked for,
 * and the rows it finds closer come next.  So the row the executor fetches
 * after the k a query wants (to see that the k-th is in place) costs no
 * round.
 *
 * Windows (strict_window_wants_round): before the first row, the first
 * STRICT_FIRST_ROWS (as many as a typical ORDER BY ... LIMIT query wants);
 * once those are returned and the one after them, as many again as were
 * returned (the window doubles).  A further round runs first while the last
 * row of the window could be beaten.
 */
static inline bool
could_be_beaten(GateannScanOpaque so, float dist)
{
	return !so->exhausted && on_pq_scale(so, dist) > so->unreached;
}

/* The least exact distance a row the search has not found can have */
static inline float
unreached_distance(GateannScanOpaque so)
{
	/* (on_pq_scale inverted) */
	if (so->metric == GATEANN_METRIC_COSINE)
		return (so->unreached + so->pq_offset - 2.0f) / 2.0f;
	if (so->metric == GATEANN_METRIC_L2)
		return so->unreached + so->pq_offset;
	return so->unreached;
}

/*
 * strict_order: the row at `dist` goes to the executor with the bound
 * `bound` (at most dist, in the index's units).  The executor passes a row
 * on once the index has returned a bound at least its distance, so the rows
 * returned below the largest bound returned may have been passed on: a row
 * found later that is closer than the farthest of them is skipped
 * (so->passed).
 */
static void
account_returned_row(GateannScanOpaque so, float dist, float bound)
{
	int			i,
				kept;

	if (so->nunpassed == so->unpassed_size)
	{
		so->unpassed_size = Max(16, so->unpassed_size * 2);
		so->unpassed = so->unpassed == NULL ? palloc(sizeof(float) * so->unpassed_size) :
			repalloc(so->unpassed, sizeof(float) * so->unpassed_size);
	}
	so->unpassed[so->nunpassed++] = dist;
	if (bound <= so->max_bound)
		return;
	so->max_bound = bound;
	for (i = 0, kept = 0; i < so->nunpassed; i++)
	{
		if (so->unpassed[i] < bound)
			so->passed = Max(so->passed, so->unpassed[i]);
		else
			so->unpassed[kept++] = so->unpassed[i];
	}
	so->nunpassed = kept;
}

/*
 * The bound of a row that could be beaten: its own distance when every row
 * returned but not passed on could not be (the executor may then pass those
 * on, and holds this one until a later bound reaches it); else no more than
 * the least distance a row not found yet can have, so that no such row is
 * passed on before the round that settles it.
 */
static float
beatable_row_bound(GateannScanOpaque so, float dist)
{
	int			i;

	for (i = 0; i < so->nunpassed; i++)
		if (could_be_beaten(so, so->unpassed[i]))
			return Min(dist, Max(unreached_distance(so), so->max_bound));
	return dist;
}

/*
 * The index's distance (internal units) up to which a row may be closer
 * than the row at d by the operator's distance: d itself, unless records
 * hold halves, whose distances are within vector_error of the rows' own
 * (gateann_distance_lower_bound): then twice that beyond d.
 */
static float
within_record_error(GateannScanOpaque so, float d)
{
	double		slack = 2.0 * so->vector_error;

	if (slack <= 0)
		return d;
	if (so->metric == GATEANN_METRIC_L2)
	{
		double		r = sqrt(Max((double) d, 0.0)) + slack;

		return (float) (r * r);
	}
	return (float) (d + slack);
}

static bool
strict_window_wants_round(GateannScanOpaque so)
{
	int64		window;
	int			k,
				i;
	float		worst;

	if (so->results.size == 0 || so->exhausted)
		return false;
	if (so->stats.returned < so->strict_window)
		return false;
	if (so->strict_window > 0)
	{
		/*
		 * Past the window: the rows the executor fetches to see that the
		 * window's last row is in place (those at its distance -- within
		 * the halves' error of it, whose bounds are below its distance --
		 * and the one after them) are no reason to test the next window.
		 */
		if (so->results.items[0].dist >= so->last_dist &&
			so->results.items[0].dist <= within_record_error(so, so->last_dist))
			return false;
		if (!so->lookahead_taken)
		{
			so->lookahead_taken = true;
			return false;
		}
	}
	window = Max((int64) STRICT_FIRST_ROWS, so->stats.returned * 2);
	k = (int) Min(window - so->stats.returned, (int64) so->results.size);
	if (so->strict_scratch_size < so->results.size)
	{
		so->strict_scratch_size = Max(so->results.size, 2 * so->strict_scratch_size);
		so->strict_scratch = so->strict_scratch == NULL ?
			palloc(sizeof(GateannScored) * so->strict_scratch_size) :
			repalloc(so->strict_scratch, sizeof(GateannScored) * so->strict_scratch_size);
	}
	for (i = 0; i < so->results.size; i++)
	{
		so->strict_scratch[i].dist = so->results.items[i].dist;
		so->strict_scratch[i].id = so->results.items[i].id;
	}
	(void) gateann_topk_sorted(so->strict_scratch, so->results.size, k);
	worst = so->strict_scratch[k - 1].dist;
	if (could_be_beaten(so, worst))
		return true;			/* tested again after that round */
	so->strict_window = window;
	so->lookahead_taken = false;
	return false;
}

/*
 * A row about to be returned must point into the table: a damaged record
 * (no checksums) could otherwise send the executor to a block past the
 * table's end, where the storage layer's error names neither the index nor
 * the damage.  The table's size is looked up again before a TID is refused
 * (rows inserted since the last look extend it).
 */
static inline bool
tid_within(ItemPointer tid, BlockNumber nblocks)
{
	return ItemPointerIsValid(tid) &&
		ItemPointerGetOffsetNumberNoCheck(tid) <= MaxHeapTuplesPerPage &&
		ItemPointerGetBlockNumberNoCheck(tid) < nblocks;
}

static void
check_heap_tid(IndexScanDesc scan, const HeapEntry *r)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;
	ItemPointerData tid = r->tid;

	if (tid_within(&tid, so->heap_blocks))
		return;
	/* (no table to look at: any block number a TID can hold) */
	so->heap_blocks = scan->heapRelation != NULL ?
		RelationGetNumberOfBlocks(scan->heapRelation) : MaxBlockNumber + 1;
	if (tid_within(&tid, so->heap_blocks))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("gateann index \"%s\" is damaged: node %u points to heap TID %s, outside its table (%u blocks)",
					RelationGetRelationName(scan->indexRelation), r->id,
					gateann_tid_string(&tid), so->heap_blocks),
			 errhint("REINDEX the index.")));
}

/* The next row without a distance (tail.h) into the scan descriptor */
static bool
tail_tuple(IndexScanDesc scan)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;
	HeapEntry	r;
	int			class;

	if (!gateann_tail_next(&so->tail, scan->indexRelation, &so->meta, so->store,
						   so->filtering ? so->filter : NULL, &r.tid, &r.recheck, &class))
		return false;
	r.id = InvalidNodeId;
	check_heap_tid(scan, &r);
	scan->xs_heaptid = r.tid;
	scan->xs_recheck = so->need_recheck || r.recheck;
	scan->xs_recheckorderby = false;
	if (scan->numberOfOrderBys > 0)
	{
		/* NULL after NaN: a NULL query or vector has a NULL distance */
		scan->xs_orderbynulls[0] = so->query_null || class == GATEANN_TAIL_NULL;
		scan->xs_orderbyvals[0] = Float8GetDatum(get_float8_nan());
	}
	so->stats.returned++;
	return true;
}

bool
gateann_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;
	MemoryContext oldcxt;
	bool		found = false;

	if (!ScanDirectionIsForward(dir))
		elog(ERROR, "gateann only supports forward scans");

	oldcxt = MemoryContextSwitchTo(so->cxt);
	if (!so->initialized)
		begin_search(scan);

	while (!so->no_results)
	{
		/*
		 * strict_order (see strict_window_wants_round): the round the last
		 * row returned asked for, or the one a window asks for, runs first;
		 * a row that still comes out closer than one the executor may have
		 * passed on is skipped (account_returned_row).
		 */
		if (so->iterative == GATEANN_ITERATIVE_STRICT)
		{
			if (so->last_untested && could_be_beaten(so, so->last_dist) &&
				next_round(scan))
				continue;
			so->last_untested = false;
			if (strict_window_wants_round(so) && next_round(scan))
				continue;
		}
		if (so->results.size > 0)
		{
			HeapEntry	r = heap_pop(&so->results);
			float		bound = r.dist;

			if (so->iterative == GATEANN_ITERATIVE_STRICT)
			{
				/*
				 * (with halves, a row within their error of one passed on
				 * may be closer by the operator, unless it is beyond every
				 * bound returned: the executor passed on nothing beyond)
				 */
				if (r.dist < so->passed ||
					(so->vector_error > 0 && so->passed > -FLT_MAX &&
					 r.dist < so->max_bound && r.dist <= within_record_error(so, so->passed)))
				{
					so->stats.skipped++;
					continue;
				}
				if (could_be_beaten(so, r.dist))
				{
					bound = beatable_row_bound(so, r.dist);
					so->last_untested = true;
				}
				account_returned_row(so, r.dist, bound);
				so->last_dist = r.dist;
			}
			check_heap_tid(scan, &r);
			scan->xs_heaptid = r.tid;
			scan->xs_recheck = so->need_recheck || r.recheck;
			if (scan->numberOfOrderBys > 0)
			{
				/*
				 * The executor computes the operator's distance and orders
				 * rows by it: this is a bound below it
				 */
				scan->xs_orderbyvals[0] =
					Float8GetDatum(gateann_distance_lower_bound(so->metric, bound,
																so->meta.dims,
																so->query_norm * r.norm,
																so->vector_error));
				scan->xs_orderbynulls[0] = false;
				scan->xs_recheckorderby = true;
			}
			else
				scan->xs_recheckorderby = false;
			so->stats.returned++;
			found = true;
			break;
		}
		if (so->iterative == GATEANN_ITERATIVE_OFF)
			break;
		if (!next_round(scan))
		{
			so->search_done = !so->budget_spent;
			break;
		}
	}
	/*
	 * Rows without a distance come after every row the search can rank:
	 * once the search has nothing left (not when it stopped at its budget,
	 * or after its one round with iterative_scan = off), or at once when
	 * there was no search.
	 */
	if (!found && so->tail.classes != 0 && so->search_done)
		found = tail_tuple(scan);
	if (!found && so->budget_spent)
		report_budget_spent(scan);
	collect_stats(so);
	MemoryContextSwitchTo(oldcxt);
	return found;
}

void
gateann_endscan(IndexScanDesc scan)
{
	GateannScanOpaque so = (GateannScanOpaque) scan->opaque;

	/* gateann_last_scan() reports the scan that ended last */
	gateann_last_scan_stats = so->stats;
	if (so->io)
		gateann_io_close(so->io);
	MemoryContextDelete(so->cxt);
	pfree(so);
	scan->opaque = NULL;
}
