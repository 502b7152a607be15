/*
 * gateann.c — module entry: GUCs, reloptions, the access method handler.
 */
#include "postgres.h"

#include <float.h>

#include "gateann.h"
#include "distance.h"
#include "io.h"
#include "pq.h"
#include "record_cache.h"
#include "shmem.h"
#include "vector.h"

#include "access/reloptions.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(gateann_handler);

int			gateann_search_list_size = 100;
int			gateann_read_list_size = 0;
int			gateann_max_scan_tuples = 20000;
int			gateann_filter_mode = GATEANN_FILTER_MODE_GATE;
int			gateann_tunnel_neighbors_guc = 0;
int			gateann_tunnel_batch = 4;
double		gateann_prefilter_selectivity = 0.02;
bool		gateann_track_timing = false;
bool		gateann_dynamic_width = true;
int			gateann_page_search = GATEANN_PAGE_SEARCH_AUTO;

int			gateann_iterative_scan = GATEANN_ITERATIVE_STRICT;

static const struct config_enum_entry iterative_scan_options[] = {
	{"off", GATEANN_ITERATIVE_OFF, false},
	{"strict_order", GATEANN_ITERATIVE_STRICT, false},
	{"relaxed_order", GATEANN_ITERATIVE_RELAXED, false},
	{NULL, 0, false}
};

static const struct config_enum_entry filter_mode_options[] = {
	{"gate", GATEANN_FILTER_MODE_GATE, false},
	{"post", GATEANN_FILTER_MODE_POST, false},
	{"early", GATEANN_FILTER_MODE_EARLY, false},
	{NULL, 0, false}
};

static const struct config_enum_entry page_search_options[] = {
	{"auto", GATEANN_PAGE_SEARCH_AUTO, false},
	{"reuse", GATEANN_PAGE_SEARCH_REUSE, false},
	{"on", GATEANN_PAGE_SEARCH_ON, false},
	{"off", GATEANN_PAGE_SEARCH_OFF, false},
	{"true", GATEANN_PAGE_SEARCH_ON, true},
	{"false", GATEANN_PAGE_SEARCH_OFF, true},
	{"yes", GATEANN_PAGE_SEARCH_ON, true},
	{"no", GATEANN_PAGE_SEARCH_OFF, true},
	{"1", GATEANN_PAGE_SEARCH_ON, true},
	{"0", GATEANN_PAGE_SEARCH_OFF, true},
	{NULL, 0, false}
};

static relopt_kind gateann_relopt_kind;

void		_PG_init(void);

static relopt_enum_elt_def record_precision_values[] = {
	{"auto", GATEANN_PRECISION_AUTO},
	{"single", GATEANN_PRECISION_SINGLE},
	{"half", GATEANN_PRECISION_HALF},
	{NULL}
};

void
_PG_init(void)
{
	gateann_distance_init();

	gateann_relopt_kind = add_reloption_kind();
	add_int_reloption(gateann_relopt_kind, "max_neighbors",
					  "Maximum out-degree R of a node in the graph",
					  GATEANN_DEFAULT_MAX_NEIGHBORS, 4, GATEANN_MAX_NEIGHBORS_LIMIT,
					  AccessExclusiveLock);
	add_int_reloption(gateann_relopt_kind, "build_search_list_size",
					  "Search list size L used while building the graph",
					  GATEANN_DEFAULT_BUILD_LIST_SIZE, 4, GATEANN_MAX_BUILD_LIST_SIZE,
					  AccessExclusiveLock);
	add_real_reloption(gateann_relopt_kind, "alpha",
					   "Robust-prune distance factor of the second build pass",
					   GATEANN_DEFAULT_ALPHA, 1.0, 2.0,
					   AccessExclusiveLock);
	add_int_reloption(gateann_relopt_kind, "pq_subspaces",
					  "Bytes per PQ code (0 = automatic: about dims/4, at most 256)",
					  0, 0, 1024,
					  AccessExclusiveLock);
	/*
	 * At least 2 when given (gateann_check_options): with one neighbor per
	 * node, the rows tunneling follows form chains, and no set of entry
	 * points reaches every node over them.
	 */
	add_int_reloption(gateann_relopt_kind, "tunnel_neighbors",
					  "Neighbors per node kept in the in-memory neighbor store (R_max; 0 = chosen by the build: 32, or all max_neighbors when 32 do not navigate the data)",
					  0, 0, GATEANN_MAX_NEIGHBORS_LIMIT,
					  ShareUpdateExclusiveLock);
	add_bool_reloption(gateann_relopt_kind, "locality_order",
					   "Number nodes cluster by cluster at build time, so that searches read the in-memory stores with locality",
					   true, AccessExclusiveLock);
	add_enum_reloption(gateann_relopt_kind, "record_precision",
					   "How node records hold their vectors: single (4 bytes a dimension), half (2: half the bytes per read), or auto (half for a halfvec column, which loses nothing; else single)",
					   record_precision_values, GATEANN_PRECISION_AUTO,
					   "Valid values are \"auto\", \"single\" and \"half\".",
					   AccessExclusiveLock);

	DefineCustomIntVariable("gateann.search_list_size",
							"Candidate list size L of a gateann search.",
							"Larger values raise recall and cost.",
							&gateann_search_list_size,
							100, 1, 100000,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gateann.read_list_size",
							"Candidates a search reads after walking the graph in memory.",
							"0 reads every candidate the walk expands.",
							&gateann_read_list_size,
							0, 0, 100000,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gateann.max_scan_tuples",
							"Maximum nodes a gateann scan visits when it keeps streaming rows.",
							"Caps the work of queries whose filter the executor applies above the index scan.",
							&gateann_max_scan_tuples,
							20000, 1, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("gateann.filter_mode",
							 "How gateann scans apply conditions on filter columns.",
							 "gate checks them in memory before any read and tunnels through non-matching nodes; post and early read every node (the baselines of the GateANN paper).",
							 &gateann_filter_mode,
							 GATEANN_FILTER_MODE_GATE, filter_mode_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("gateann.iterative_scan",
							 "What a gateann scan does when the rows of its search run out.",
							 "off returns only them; strict_order searches on with a longer list and returns rows in exact distance order (a row closer than one already returned is skipped); relaxed_order returns every row found, a later one possibly closer.",
							 &gateann_iterative_scan,
							 GATEANN_ITERATIVE_STRICT, iterative_scan_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gateann.tunnel_neighbors",
							"Neighbors of the in-memory neighbor store used when tunneling (0 = all stored).",
							"At most the index's tunnel_neighbors option are stored.",
							&gateann_tunnel_neighbors_guc,
							0, 0, GATEANN_MAX_NEIGHBORS_LIMIT,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gateann.tunnel_batch",
							"Consecutive failing candidates a gate search crosses in memory together.",
							"1 crosses one at a time (GateANN's Algorithm 1); more overlap their memory accesses.",
							&gateann_tunnel_batch,
							4, 1, GATEANN_TUNNEL_BATCH_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("gateann.prefilter_selectivity",
							 "In gate mode, filters estimated to match at most this fraction of the index are answered by pre-filtering.",
							 "Pre-filtering checks every node in memory, ranks the matching ones by PQ distance and reads only the best L; 0 turns it off.",
							 &gateann_prefilter_selectivity,
							 0.02, 0.0, 1.0,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("gateann.track_timing",
							 "Times the parts of each gateann scan (tunnel_us and compute_us of gateann_last_scan()).",
							 "Off by default: it reads the clock twice per node read.",
							 &gateann_track_timing,
							 false,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("gateann.dynamic_width",
							 "An unfiltered graph walk starts with two reads in flight and doubles them, up to gateann.io_width, as its reads stop coming closer to the query.",
							 "Off: gateann.io_width reads from the start.",
							 &gateann_dynamic_width,
							 true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("gateann.page_search",
							 "Searches use every record of the node pages they read, not only the one they read it for.",
							 "A candidate on a page read earlier in the scan is taken from it without a read; the page's other records that match the filter and are near enough join the results and are expanded.  auto: for an index too large to be read into shared buffers.",
							 &gateann_page_search,
							 GATEANN_PAGE_SEARCH_AUTO, page_search_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	gateann_planner_init();
	gateann_io_define_gucs();
	gateann_shmem_define_gucs();
	gateann_record_cache_define_gucs();
	if (process_shared_preload_libraries_in_progress)
		gateann_shmem_preload_init();
	MarkGUCPrefixReserved("gateann");
}

bytea *
gateann_options(Datum reloptions, bool validate)
{
	static const relopt_parse_elt tab[] = {
		{"max_neighbors", RELOPT_TYPE_INT, offsetof(GateannOptions, max_neighbors)},
		{"build_search_list_size", RELOPT_TYPE_INT, offsetof(GateannOptions, build_search_list_size)},
		{"alpha", RELOPT_TYPE_REAL, offsetof(GateannOptions, alpha)},
		{"pq_subspaces", RELOPT_TYPE_INT, offsetof(GateannOptions, pq_subspaces)},
		{"tunnel_neighbors", RELOPT_TYPE_INT, offsetof(GateannOptions, tunnel_neighbors)},
		{"locality_order", RELOPT_TYPE_BOOL, offsetof(GateannOptions, locality_order)},
		{"record_precision", RELOPT_TYPE_ENUM, offsetof(GateannOptions, record_precision)},
	};

	bytea	   *opts = (bytea *) build_reloptions(reloptions, validate, gateann_relopt_kind,
												  sizeof(GateannOptions), tab, lengthof(tab));

	/*
	 * At CREATE INDEX and ALTER INDEX ... SET: refuse what the next build
	 * would refuse, now rather than at REINDEX.
	 */
	if (validate && opts != NULL)
		gateann_check_options((GateannOptions *) opts);
	return opts;
}

GateannOptions *
gateann_get_options(Relation index)
{
	GateannOptions *opts = (GateannOptions *) index->rd_options;

	if (opts == NULL)
	{
		opts = palloc0(sizeof(GateannOptions));
		opts->max_neighbors = GATEANN_DEFAULT_MAX_NEIGHBORS;
		opts->build_search_list_size = GATEANN_DEFAULT_BUILD_LIST_SIZE;
		opts->alpha = GATEANN_DEFAULT_ALPHA;
		opts->pq_subspaces = 0;
		opts->tunnel_neighbors = 0;
		opts->locality_order = true;
		opts->record_precision = GATEANN_PRECISION_AUTO;
	}
	return opts;
}

/*
 * Cross-option checks that reloption ranges alone cannot express.  The
 * neighbor store keeps at most R neighbors per node, so tunnel_neighbors is
 * used as min(tunnel_neighbors, max_neighbors) (see
 * gateann_tunnel_neighbors), not rejected.
 */
void
gateann_check_options(const GateannOptions *opts)
{
	if (opts->build_search_list_size < opts->max_neighbors)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("build_search_list_size (%d) must be at least max_neighbors (%d)",
						opts->build_search_list_size, opts->max_neighbors)));
	if (opts->tunnel_neighbors == 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tunnel_neighbors must be 0 (chosen by the build) or at least 2"),
				 errhint("With one neighbor per node, tunneling follows chains that cannot reach every node.")));
}

/*
 * The tunneling prefix a build orders lists for: the option, or when it is
 * 0 the default, which the build may widen to all max_neighbors
 * (gateann_graph_complete).
 */
int
gateann_build_tunnel_neighbors(const GateannOptions *opts)
{
	int			r_max = opts->tunnel_neighbors > 0 ?
		opts->tunnel_neighbors : GATEANN_DEFAULT_TUNNEL_NEIGHBORS;

	return Min(r_max, opts->max_neighbors);
}

bool
gateann_build_chooses_tunnel_neighbors(const GateannOptions *opts)
{
	return opts->tunnel_neighbors == 0;
}

/*
 * Neighbors per node the neighbor store keeps for a built index: the option
 * when given (ALTER INDEX ... SET changes it without a rebuild), else what
 * the build chose (metapage).
 */
int
gateann_tunnel_neighbors(const GateannOptions *opts, const GateannMetaPageData *meta)
{
	int			r_max = opts->tunnel_neighbors > 0 ?
		opts->tunnel_neighbors : meta->tunnel_neighbors;

	return Max(1, Min(r_max, Max(meta->max_neighbors, 1)));
}

/*
 * The metric of an index is given by the one distance operator of its first
 * column's operator family: strategy 1 is L2, 2 inner product, 3 cosine.
 */
GateannMetric
gateann_index_metric(Relation index)
{
	Oid			opfamily = index->rd_opfamily[0];
	Oid			opcintype = index->rd_opcintype[0];
	int			strategy;

	for (strategy = GATEANN_METRIC_L2; strategy <= GATEANN_METRIC_COSINE; strategy++)
	{
		Oid			opr = get_opfamily_member(opfamily, opcintype, opcintype, strategy);

		/* filter families use the same numbers for search operators */
		if (OidIsValid(opr) &&
			SearchSysCacheExists3(AMOPOPID, ObjectIdGetDatum(opr),
								  CharGetDatum(AMOP_ORDER), ObjectIdGetDatum(opfamily)))
			return (GateannMetric) strategy;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("operator class of the first column of gateann index \"%s\" has no distance operator",
					RelationGetRelationName(index)),
			 errhint("The first column of a gateann index is the vector column: use float4_l2_ops, float4_ip_ops or float4_cosine_ops (float8_* for double precision[], or the vector_* and halfvec_* classes of gateann_vector).")));
	return GATEANN_METRIC_L2;	/* keep compiler quiet */
}

/*
 * Bytes per PQ code of an index whose vectors have `dims` dimensions: the
 * option's, or a size chosen from the dimensions (0).  More than dims is
 * an error naming the index (the build's, or the first insert's into an
 * index built on no rows).
 */
int
gateann_pq_subspaces(Relation index, const GateannOptions *opts, int dims)
{
	int			m = opts->pq_subspaces > 0 ? opts->pq_subspaces :
		gateann_pq_default_subspaces(dims);

	if (m > dims)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gateann index \"%s\": pq_subspaces (%d) cannot exceed the number of dimensions (%d)",
						RelationGetRelationName(index), m, dims),
				 errhint("ALTER INDEX ... SET (pq_subspaces = n) with n at most %d, or 0 for a size chosen from the dimensions.",
						 dims)));
	return m;
}

/* The metric's name, as gateann_index_info() shows it */
const char *
gateann_metric_name(int metric)
{
	switch (metric)
	{
		case GATEANN_METRIC_L2:
			return "l2";
		case GATEANN_METRIC_IP:
			return "inner_product";
		case GATEANN_METRIC_COSINE:
			return "cosine";
	}
	return "unknown";
}

char *
gateann_tid_string(ItemPointer tid)
{
	return psprintf("(%u,%u)", ItemPointerGetBlockNumberNoCheck(tid),
					ItemPointerGetOffsetNumberNoCheck(tid));
}

void
gateann_check_interrupts(void)
{
	CHECK_FOR_INTERRUPTS();
}

static char *
gateann_buildphasename(int64 phasenum)
{
	switch (phasenum)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case GATEANN_PHASE_SCAN:
			return "scanning table";
		case GATEANN_PHASE_TRAIN:
			return "training PQ codebook";
		case GATEANN_PHASE_ORDER:
			return "ordering nodes by cluster";
		case GATEANN_PHASE_ENCODE:
			return "encoding PQ codes";
		case GATEANN_PHASE_GRAPH_PASS1:
			return "building graph";
		case GATEANN_PHASE_GRAPH_PASS2:
			return "building graph (second pass)";
		case GATEANN_PHASE_GRAPH_PASS3:
			return "building graph (third pass)";
		case GATEANN_PHASE_PARTITION:
			return "assigning vectors to partitions";
		case GATEANN_PHASE_PARTITION_GRAPH:
			return "building graph partitions";
		case GATEANN_PHASE_WRITE:
			return "writing index pages";
		default:
			return NULL;
	}
}

Datum
gateann_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	amroutine->amstrategies = 0;
	amroutine->amsupport = GATEANN_NUM_PROCS;
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = false;
	amroutine->amcanorderbyop = true;
	amroutine->amcanbackward = false;
	amroutine->amcanunique = false;
	amroutine->amcanmulticol = true;
	amroutine->amoptionalkey = true;
	amroutine->amsearcharray = true;
	amroutine->amsearchnulls = true;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
#ifdef GATEANN_HAVE_AMCANBUILDPARALLEL
	amroutine->amcanbuildparallel = true;
#endif
	amroutine->amcaninclude = false;
	amroutine->amusemaintenanceworkmem = true;
	amroutine->amparallelvacuumoptions = VACUUM_OPTION_PARALLEL_BULKDEL;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = gateann_build;
	amroutine->ambuildempty = gateann_buildempty;
	amroutine->aminsert = gateann_insert;
	amroutine->ambulkdelete = gateann_bulkdelete;
	amroutine->amvacuumcleanup = gateann_vacuumcleanup;
	amroutine->amcanreturn = NULL;
	amroutine->amcostestimate = gateann_costestimate;
	amroutine->amoptions = gateann_options;
	amroutine->amproperty = NULL;
	amroutine->ambuildphasename = gateann_buildphasename;
	amroutine->amvalidate = gateann_validate;
	amroutine->amadjustmembers = NULL;
	amroutine->ambeginscan = gateann_beginscan;
	amroutine->amrescan = gateann_rescan;
	amroutine->amgettuple = gateann_gettuple;
	amroutine->amgetbitmap = NULL;
	amroutine->amendscan = gateann_endscan;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;

	PG_RETURN_POINTER(amroutine);
}
