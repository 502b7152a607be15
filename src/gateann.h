/*
 * gateann.h — on-disk format, options and entry points shared by the
 * gateann index access method's modules.
 *
 * Storage, all in the index's main fork, standard pages:
 *
 *   block 0                  metapage (GateannMetaPageData)
 *   blocks 1 .. C            PQ codebook (dims * 256 floats, chunked)
 *   blocks node_start ..     node records, fixed size, addressed by node id
 *
 * A node record is
 *
 *   GateannNodeHeader | float vector[dims] | uint32 neighbors[R] |
 *   uint8 pq_code[M] | filter area
 *
 * Records never straddle a page boundary unless a record is larger than a
 * page, in which case it occupies pages_per_record consecutive blocks (each
 * a normal page holding one chunk).  Keeping the PQ code inside the record
 * means one sequential pass over the node pages rebuilds every in-memory
 * store (PQ codes, neighbor store, filter store).
 *
 * Every page keeps pd_lower at the end of its used bytes, so full-page
 * images (log_newpage with page_std, generic WAL) never drop record data as
 * "hole".
 */
#ifndef GATEANN_H
#define GATEANN_H

#include "postgres.h"

#include "access/amapi.h"
#include "access/genam.h"
#include "access/itup.h"
#include "storage/block.h"
#include "storage/lockdefs.h"
#include "storage/bufpage.h"
#include "utils/relcache.h"

#include "compat.h"

#define GATEANN_MAGIC			0x47415445	/* "GATE" */
/*
 * 3: a record's header carries the check of its contents (page.h)
 * 4: rows whose vector has no distance (NULL, or zero under cosine) are
 *    kept as tail records
 */
#define GATEANN_FORMAT_VERSION	4

#define GATEANN_METAPAGE_BLKNO	0

/* Page kinds, in the special space */
#define GATEANN_PAGE_META		1
#define GATEANN_PAGE_CODEBOOK	2
#define GATEANN_PAGE_NODES		3
#define GATEANN_PAGE_DICT		4

typedef struct GateannPageOpaqueData
{
	uint32		magic;			/* GATEANN_MAGIC */
	uint16		kind;			/* GATEANN_PAGE_* */
	uint16		unused;
} GateannPageOpaqueData;

typedef GateannPageOpaqueData *GateannPageOpaque;

#define GateannPageGetOpaque(page) \
	((GateannPageOpaque) PageGetSpecialPointer(page))

/* Bytes of record data one page can hold. */
#define GATEANN_PAGE_CAPACITY \
	(BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - MAXALIGN(sizeof(GateannPageOpaqueData)))

/* Distance metrics.  Values are stored in the metapage. */
typedef enum GateannMetric
{
	GATEANN_METRIC_L2 = 1,		/* operator <->, strategy 1 */
	GATEANN_METRIC_IP = 2,		/* operator <#>, strategy 2 */
	GATEANN_METRIC_COSINE = 3	/* operator <=>, strategy 3 */
} GateannMetric;

#define GATEANN_MAX_DIMS		16000
#define GATEANN_MAX_NEIGHBORS_LIMIT	512	/* upper bound of max_neighbors */
#define GATEANN_MAX_FILTER_COLS	(INDEX_MAX_KEYS - 1)

/*
 * How a filter column is copied into a record.  Fixed-width types are stored
 * by value in `width` bytes; variable-width types (text, numeric, arrays) get
 * a slot of `width` bytes: an 8-byte header whose first 4 bytes give the
 * length, then the detoasted datum (with its own 4-byte varlena header).
 * A value that does not fit is flagged as overflowed: exact
 * verification then cannot be done from the record and the executor's
 * recheck decides (no false negatives either way).
 */
typedef struct GateannFilterColumn
{
	Oid			typid;
	int16		typlen;			/* pg_type.typlen */
	bool		typbyval;
	char		typalign;
	uint16		offset;			/* of the slot within the filter area */
	uint16		width;			/* slot bytes */

	/* in-memory filter store (filter.c) */
	uint8		kind;			/* GATEANN_FILTER_KIND_* */
	bool		dict_exact;		/* dictionary holds every distinct value */
	uint16		nbounds;		/* dictionary entries */
	uint32		dict_offset;	/* within the dictionary region */
	uint32		dict_bytes;
} GateannFilterColumn;

/* Per-column flag bytes at the start of the filter area */
#define GATEANN_FILTER_NULL		0x01
#define GATEANN_FILTER_OVERFLOW	0x02

/* Record header. */
typedef struct GateannNodeHeader
{
	uint32		node_id;		/* lets a reader check it got the right record */
	uint32		version;		/* bumped whenever the slot is rewritten */
	ItemPointerData heap_tid;
	uint16		flags;			/* GATEANN_NODE_* */
	uint16		nneighbors;
	uint32		check;			/* CRC-32C of node_id, version, heap_tid, the
								 * vector and the filter copies (page.h) */
} GateannNodeHeader;

#define GATEANN_NODE_DELETED	0x0001	/* heap tuple is dead: never a result */
#define GATEANN_NODE_FREE		0x0002	/* slot freed by VACUUM (DELETED too, no
										 * neighbors, no in-edges): an insert
										 * may take it */
/*
 * Tail records: rows whose distance to every query is NULL (a NULL vector)
 * or NaN (a zero vector under cosine, which has no direction).  They hold
 * the row's heap TID and filter copies, no neighbors, and are outside the
 * graph: no list names them and no search reaches them; an ordered scan
 * returns them after every other row, NaN before NULL, as ORDER BY ...
 * NULLS LAST sorts them (src/README, "Tail records").  Set once per slot
 * incarnation, and covered by the record's check.
 */
#define GATEANN_NODE_NULL_VECTOR	0x0004	/* vector NULL: distance NULL */
#define GATEANN_NODE_NO_DIRECTION	0x0008	/* zero vector, cosine: distance NaN */
#define GATEANN_NODE_TAIL		(GATEANN_NODE_NULL_VECTOR | GATEANN_NODE_NO_DIRECTION)

/*
 * Entry points a search can start from: the medoid and the nodes nearest the
 * centroids of 256 k-means groups of the vectors (graph.h).
 */
#define GATEANN_MAX_ENTRIES		257

/* Slot reuses the metapage remembers, for stores that cannot see them */
#define GATEANN_REUSE_LOG		1024

/*
 * Metapage contents.  Everything needed to interpret the rest of the file.
 */
typedef struct GateannMetaPageData
{
	uint32		magic;
	uint32		format_version;
	uint64		build_id;		/* changes on every (re)build */

	int32		dims;			/* 0 for an index built on no rows */
	int32		metric;			/* GateannMetric */
	int32		max_neighbors;	/* R */
	int32		build_search_list_size;
	float4		alpha;
	int32		pq_subspaces;	/* M */
	int32		tunnel_neighbors;	/* prefix the build ordered lists for */

	uint32		nnodes;			/* records in use, node ids 0 .. nnodes-1 */
	uint32		ndeleted;
	uint32		entry_point;	/* medoid; InvalidNodeId if nnodes == 0 */

	BlockNumber codebook_start;
	BlockNumber codebook_pages;
	BlockNumber dict_start;		/* filter-column dictionaries */
	BlockNumber dict_pages;
	uint32		dict_bytes;
	BlockNumber node_start;
	BlockNumber node_pages;

	uint32		record_size;	/* bytes, MAXALIGNed */
	uint32		records_per_page;	/* 0 when a record spans pages */
	uint32		pages_per_record;	/* 1 unless a record spans pages */

	/* offsets within a record */
	uint32		vector_offset;
	uint32		neighbors_offset;
	uint32		pqcode_offset;
	uint32		filter_offset;
	uint32		filter_size;

	int32		nfilter;
	GateannFilterColumn filter[GATEANN_MAX_FILTER_COLS];

	/*
	 * Slot reuse (VACUUM frees the slots of deleted nodes, inserts take
	 * them).  nnodes counts every slot; live nodes are nnodes - ndeleted -
	 * nfree.  Free slots are found from free_cursor on.  Every reuse is
	 * counted and its id kept in a ring, so that stores nobody updates in
	 * place (a private copy, a standby's) can refresh the reused nodes.
	 * (Zero in an index written before these fields: nothing free.)
	 */
	uint32		nfree;
	uint32		free_cursor;
	uint64		reuse_count;
	uint32		reuse_log[GATEANN_REUSE_LOG];

	/*
	 * The PQ codebook was trained on pq_trained_rows vectors.  An index
	 * built on few rows (or on none: the first insert trains it on its own
	 * vector) is retrained, and every code re-encoded, once it has
	 * pq_retrain_at live nodes (retrain.c); 0 when the training sample is
	 * as large as a build's.  (Zero in an index written before these
	 * fields: never retrained.)
	 */
	uint32		pq_trained_rows;
	uint32		pq_retrain_at;

	/*
	 * An index that is retrained also gets new filter dictionaries then, so
	 * it reserves two areas of dict_area_pages / 2 pages each, room for the
	 * largest dictionaries its columns can have: dict_start is in one, the
	 * next dictionaries are written to the other before the metapage points
	 * to them.  dict_generation counts the switches (a loader that saw it
	 * move by more than one while it read may have read a half-written
	 * dictionary).  0 pages: no reserve.
	 */
	BlockNumber dict_area_start;
	BlockNumber dict_area_pages;
	uint32		dict_generation;

	/*
	 * Entry points (graph.h): entries[0] is entry_point, the others the
	 * nodes nearest the centroids of the build's k-means groups.  A search
	 * starts from the ones nearest its query.  A deleted one is replaced by
	 * VACUUM like entry_point.
	 */
	uint32		nentries;
	uint32		entries[GATEANN_MAX_ENTRIES];

	/*
	 * How well the codebook fits what is inserted: pq_spacing is the
	 * codebook's gateann_pq_coarse_spacing (how far apart the regions its
	 * training saw are); since it was trained, pq_coded inserted vectors
	 * were coded, pq_poor of them more than GATEANN_PQ_POOR_FACTOR times
	 * that from their coarse centroid: rows from a region the training
	 * never saw, whose codes cannot tell them apart.  Enough of those make
	 * the codebook due for retraining (retrain.h).
	 */
	float4		pq_spacing;
	uint32		pq_coded;
	uint32		pq_poor;

	/*
	 * What the build measured of its graph (graph.h,
	 * gateann_graph_probe_recall): recall@10 of an unfiltered search with a
	 * list of build_recall_list, gateann.search_list_size when it built.
	 * (Zero when it did not: too few rows, or an index written before
	 * these fields.)
	 */
	float4		build_recall;
	int32		build_recall_list;

	/*
	 * Reachability (vacuum.c): reach_changes counts the changes that may
	 * have taken a live node's last way in -- slots VACUUM freed, nodes
	 * inserts published (their reverse-edge prunes follow) -- and
	 * reach_checked is the count a walk began at that then found every live
	 * node reachable, logged after that walk's links.  While they differ,
	 * VACUUM walks even over a store it must load first: a crash can keep a
	 * change and lose the links that followed it.  (Zero in an index written
	 * before these fields: nothing due.)
	 */
	uint64		reach_changes;
	uint64		reach_checked;

	/*
	 * How records hold their vectors (GateannRecordPrecision, the option
	 * record_precision at the build).  With halves, record_error is the
	 * largest length of x - half(x) over the vectors x the records were
	 * written from (for cosine the unit vectors), rounded up: a scan takes
	 * it off each distance it gives the executor, which must be a bound
	 * below the operator's.  Inserts raise it.  (Zero in an index written
	 * before these fields: single precision.)
	 */
	int32		record_precision;
	float4		record_error;

	/*
	 * Nonzero while a VACUUM frees deleted nodes' slots (vacuum.c): set in
	 * the update that reads the node count its list repair covers, cleared
	 * once the slots are freed.  An insert that takes its id meanwhile is
	 * past that count or in a slot just freed, so no repair sees its list:
	 * it must not keep an edge to a deleted node (insert.c).  A VACUUM that
	 * fails between leaves it set until the next one; inserts then only drop
	 * such edges sooner.  (Zero in an index written before this field.)
	 */
	uint32		freeing_slots;
} GateannMetaPageData;

typedef GateannMetaPageData *GateannMetaPage;

#define InvalidNodeId	((uint32) 0xFFFFFFFF)
#define GATEANN_MAX_NODES	((uint32) 1000000000)

/* splitmix64: the small deterministic generator every build step uses */
static inline uint64
gateann_random_next(uint64 *state)
{
	uint64		z = (*state += UINT64CONST(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64CONST(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64CONST(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Reloptions */
typedef struct GateannOptions
{
	int32		vl_len_;		/* varlena header (do not touch directly!) */
	int			max_neighbors;
	int			build_search_list_size;
	double		alpha;
	int			pq_subspaces;	/* 0 = automatic */
	int			tunnel_neighbors;	/* 0 = chosen by the build */
	bool		locality_order; /* number nodes cluster by cluster (order.c) */
	int			record_precision;	/* GateannRecordPrecision, or _AUTO */
} GateannOptions;

/* How records hold their vectors (page.h; meta->record_precision) */
typedef enum GateannRecordPrecision
{
	GATEANN_PRECISION_SINGLE = 0,	/* float4: the vector as the build had it */
	GATEANN_PRECISION_HALF = 1	/* binary16: half the bytes (half.h) */
} GateannRecordPrecision;

/* The option's default: halves for a column of halves (halfvec), else single */
#define GATEANN_PRECISION_AUTO	2

#define GATEANN_DEFAULT_MAX_NEIGHBORS		64
#define GATEANN_DEFAULT_BUILD_LIST_SIZE		128
#define GATEANN_MAX_BUILD_LIST_SIZE			10000
#define GATEANN_DEFAULT_ALPHA				1.2
#define GATEANN_DEFAULT_TUNNEL_NEIGHBORS	32

/* Build progress sub-phases (pg_stat_progress_create_index.phase) */
#define GATEANN_PHASE_SCAN			2
#define GATEANN_PHASE_TRAIN			3
#define GATEANN_PHASE_ENCODE		4
#define GATEANN_PHASE_GRAPH_PASS1	5
#define GATEANN_PHASE_GRAPH_PASS2	6
#define GATEANN_PHASE_WRITE			7
#define GATEANN_PHASE_ORDER			8	/* between TRAIN and ENCODE */
/* a build in partitions (build_merge.h), in place of ENCODE .. PASS2 */
#define GATEANN_PHASE_PARTITION		9
#define GATEANN_PHASE_PARTITION_GRAPH	10
/* the graph's third pass (graph.h: one pass where it is enough, else two after a first) */
#define GATEANN_PHASE_GRAPH_PASS3	11

/* GUCs (gateann.c) */
extern int	gateann_search_list_size;
extern int	gateann_read_list_size;
extern int	gateann_max_scan_tuples;
extern int	gateann_filter_mode;
extern int	gateann_tunnel_neighbors_guc;
extern int	gateann_tunnel_batch;

/* Upper bound of gateann.tunnel_batch */
#define GATEANN_TUNNEL_BATCH_MAX	8
extern double gateann_prefilter_selectivity;
extern bool gateann_track_timing;
extern bool gateann_dynamic_width;

/* Reads in flight at a walk's start under gateann.dynamic_width */
#define GATEANN_FIRST_WIDTH		2

/* gateann.page_search */
extern int	gateann_page_search;
#define GATEANN_PAGE_SEARCH_OFF		0
#define GATEANN_PAGE_SEARCH_REUSE	1	/* candidates from pages read earlier */
#define GATEANN_PAGE_SEARCH_ON		2	/* ... and the pages' other records */
#define GATEANN_PAGE_SEARCH_AUTO	3	/* reuse unless the index is read into
										 * shared buffers (io.h, cacheable) */

/* gateann.iterative_scan (pgvector's hnsw.iterative_scan values) */
extern int	gateann_iterative_scan;
#define GATEANN_ITERATIVE_OFF		0	/* the first search's rows only */
#define GATEANN_ITERATIVE_STRICT	1	/* search on; rows in exact order */
#define GATEANN_ITERATIVE_RELAXED	2	/* search on; every row found */

/* gateann.filter_mode */
#define GATEANN_FILTER_MODE_GATE	0	/* check in memory before I/O, tunnel */
#define GATEANN_FILTER_MODE_POST	1	/* read everything, filter after */
#define GATEANN_FILTER_MODE_EARLY	2	/* read everything, skip exact distance
										 * of non-matching nodes */

/* Statistics of the most recent scan in this backend (info.c) */
typedef struct GateannScanStats
{
	int64		visited;
	int64		reads;
	int64		buffer_hits;
	int64		tunneled;
	int64		filter_checks;
	int64		filter_false_positives;
	int64		exact_distances;
	int64		pq_distances;
	int64		returned;
	int64		io_wait_us;
	int64		tunnel_us;
	int64		compute_us;
	const char *io_method;
	bool		io_direct;		/* file reads bypassed the page cache (O_DIRECT) */
	const char *strategy;		/* "graph", "prefilter", "graph, then prefilter"
								 * ("none": no search) */
	int64		recoveries;		/* times the search was stuck and recovered */
	bool		budget_exhausted;	/* stopped at gateann.max_scan_tuples */
	int64		skipped;		/* strict_order: rows found after a farther row
								 * had been returned, left out */
	int64		resident_hits;	/* io_method auto: pages shared buffers held */
	int64		page_cache_hits;	/* ... and the kernel's page cache */
	int64		cache_hits;		/* records the shared record cache held */
	int64		page_hits;		/* records found on a page the scan had read */
	int64		page_search_results;	/* records page search took from read
										 * pages into the results */
} GateannScanStats;

extern GateannScanStats gateann_last_scan_stats;

/* gateann.c */
extern bytea *gateann_options(Datum reloptions, bool validate);
extern GateannOptions *gateann_get_options(Relation index);
extern GateannMetric gateann_index_metric(Relation index);
extern const char *gateann_metric_name(int metric);
extern int	gateann_pq_subspaces(Relation index, const GateannOptions *opts, int dims);
extern void gateann_check_options(const GateannOptions *opts);
extern int	gateann_build_tunnel_neighbors(const GateannOptions *opts);
extern bool gateann_build_chooses_tunnel_neighbors(const GateannOptions *opts);
extern int	gateann_tunnel_neighbors(const GateannOptions *opts,
									 const GateannMetaPageData *meta);
extern char *gateann_tid_string(ItemPointer tid);
/*
 * CHECK_FOR_INTERRUPTS as a function: the callback the plain-C modules
 * (pq.h, order.h) call in their long loops
 */
extern void gateann_check_interrupts(void);

/* info.c */

/* What a caller of a gateann SQL function must be allowed to do */
typedef enum GateannAccess
{
	GATEANN_ACCESS_READ,		/* SELECT on the table (what the index holds) */
	GATEANN_ACCESS_CHECK,		/* + owner, pg_maintain or pg_monitor (a walk
								 * of the whole index, holding off writers) */
	GATEANN_ACCESS_MAINTAIN		/* owner or pg_maintain (loads and evicts
								 * shared memory) */
} GateannAccess;

/*
 * Open `relid` as a gateann index with `lockmode`, after checking that the
 * current user may `access` it (ERROR naming what is missing otherwise), or
 * ERROR naming what it is instead.
 */
extern Relation gateann_open_index(Oid relid, LOCKMODE lockmode, GateannAccess access);

/* Live (not deleted, not freed) nodes of an index */
#define GATEANN_LIVE_NODES(meta) \
	((int64) (meta)->nnodes - (meta)->ndeleted - (meta)->nfree)

/* build.c */
extern IndexBuildResult *gateann_build(Relation heap, Relation index,
									   struct IndexInfo *indexInfo);
extern void gateann_buildempty(Relation index);
extern bool gateann_insert(Relation index, Datum *values, bool *isnull,
						   ItemPointer heap_tid, Relation heap,
						   IndexUniqueCheck checkUnique, bool indexUnchanged,
						   struct IndexInfo *indexInfo);

/* scan.c */
extern IndexScanDesc gateann_beginscan(Relation index, int nkeys, int norderbys);
extern void gateann_rescan(IndexScanDesc scan, ScanKey keys, int nkeys,
						   ScanKey orderbys, int norderbys);
extern bool gateann_gettuple(IndexScanDesc scan, ScanDirection dir);
extern void gateann_endscan(IndexScanDesc scan);

/* validate.c */
extern bool gateann_validate(Oid opclassoid);

/* vacuum.c */
extern IndexBulkDeleteResult *gateann_bulkdelete(IndexVacuumInfo *info,
												 IndexBulkDeleteResult *stats,
												 IndexBulkDeleteCallback callback,
												 void *callback_state);
extern IndexBulkDeleteResult *gateann_vacuumcleanup(IndexVacuumInfo *info,
													IndexBulkDeleteResult *stats);

/* planner.c */
extern void gateann_planner_init(void);

/* cost.c */
extern void gateann_costestimate(struct PlannerInfo *root, struct IndexPath *path,
								 double loop_count, Cost *indexStartupCost,
								 Cost *indexTotalCost, Selectivity *indexSelectivity,
								 double *indexCorrelation, double *indexPages);

/*
 * A read hint for memory about to be touched at random (PQ codes,
 * neighbor-store rows, the build's vectors: arrays far larger than the CPU
 * caches), so that the cache misses overlap.
 */
#if defined(__GNUC__) || defined(__clang__)
#define gateann_prefetch(addr)	__builtin_prefetch((addr), 0, 1)
#else
#define gateann_prefetch(addr)	((void) (addr))
#endif

/*
 * The same for every cache line of len bytes at addr: a PQ code of 96
 * subspaces (101 bytes) or a row of 32 neighbors (132 bytes) spans two or
 * three lines, and a hint for the first alone leaves the reads of the rest
 * (a code's last bytes are read first) to miss one by one.
 */
#define GATEANN_CACHE_LINE	64

static inline void
gateann_prefetch_range(const void *addr, size_t len)
{
	const char *p = (const char *) ((uintptr_t) addr & ~(uintptr_t) (GATEANN_CACHE_LINE - 1));
	const char *end = (const char *) addr + len;

	for (; p < end; p += GATEANN_CACHE_LINE)
		gateann_prefetch(p);
}

#endif							/* GATEANN_H */
