/*
 * cost.c — amcostestimate.
 *
 * A search reads about L = gateann.search_list_size records (pages_per_record
 * pages each) and computes R PQ distances per read record.  That work is
 * paid before the first row comes out, so it is startup cost.
 *
 * A read costs a random page when the index is not in memory and a
 * sequential one when it is (the record cache, shared buffers or the
 * kernel's page cache serve it: io_method auto); how much of it is in
 * memory is the planner's usual guess, effective_cache_size against the
 * index's size.
 *
 * Rows beyond the first L come from further rounds (strict_order: each
 * walks again with twice the list), measured at about 5 us a row with the
 * index in memory, five times what a btree scan and a sort spend: four
 * record reads' worth each.  The LIMIT arithmetic scales that by the share
 * of the index's rows a query takes, which for a filter the index cannot
 * check (the executor's) is LIMIT / the rows that pass it: at 1 % with
 * LIMIT 10, a thousand rows.  Without that term the planner chose gateann
 * and streamed 1,000 rows (5.7 ms) where a btree on the filter column and
 * a sort took 1.1 ms (bench/run.sh plans).
 *
 * Without ORDER BY a distance the index cannot be used at all.
 */
#include "postgres.h"

#include "gateann.h"
#include "meta.h"

#include "access/relation.h"
#include "optimizer/optimizer.h"
#include "utils/rel.h"
#include "utils/float.h"
#include "utils/selfuncs.h"
#include "utils/spccache.h"

/*
 * A PQ distance (M table lookups, ~10-20 ns) is cheaper than the operator
 * call cpu_operator_cost stands for: on PostgreSQL's scale, where a random
 * page read of ~100 us costs 4, it is about a quarter of one.
 */
#define PQ_DISTANCE_COST	0.25
/* A row beyond the first round's: about four record reads' worth (above) */
#define STREAM_ROW_READS	4.0

void
gateann_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
					 Cost *indexStartupCost, Cost *indexTotalCost,
					 Selectivity *indexSelectivity, double *indexCorrelation,
					 double *indexPages)
{
	GenericCosts costs;
	IndexOptInfo *index = path->indexinfo;
	Relation	rel;
	GateannOptions *opts;
	GateannMetaPageData meta;
	int			R;
	int			R_max;
	double		L;
	double		sel;
	double		visited;
	double		reads;
	double		record_pages;
	double		spc_random_page_cost;
	double		spc_seq_page_cost;
	double		cached;
	double		read_cost;
	double		rows;
	Cost		startup;

	if (path->indexorderbys == NIL)
	{
		*indexStartupCost = get_float8_infinity();
		*indexTotalCost = get_float8_infinity();
		*indexSelectivity = 0;
		*indexCorrelation = 0;
		*indexPages = 0;
#ifdef GATEANN_HAVE_DISABLED_NODES
		/*
		 * PG18 compares disabled_nodes before cost: a path disabled by e.g.
		 * enable_seqscan = off counts 1, so mark this one as worse still.
		 */
		path->path.disabled_nodes = 2;
#endif
		return;
	}

	MemSet(&costs, 0, sizeof(costs));
	genericcostestimate(root, path, loop_count, &costs);

	rel = relation_open(index->indexoid, NoLock);
	opts = gateann_get_options(rel);
	R = opts->max_neighbors;

	/*
	 * A record larger than a page (high dimensions) costs several reads.
	 * The metapage says how many; index->pages / tuples does not, since the
	 * codebook, the dictionaries and deleted nodes' pages count there too: a
	 * quotient of 1.01 rounded up priced each read of a 960-dimension index
	 * as two pages, and the planner chose a seq scan of the (TOASTed)
	 * vectors that took longer than the index scan.  A damaged metapage
	 * falls back to one page; the scan reports the damage.
	 */
	record_pages = 1.0;
	R_max = gateann_build_tunnel_neighbors(opts);
	if (gateann_peek_meta(rel, &meta))
	{
		if (meta.pages_per_record > 1)
			record_pages = meta.pages_per_record;
		R_max = gateann_tunnel_neighbors(opts, &meta);
	}
	relation_close(rel, NoLock);

	/*
	 * With index conditions of selectivity s the search crosses about L / s
	 * nodes to gather L candidates that match.  In gate mode only the
	 * matching ones are read (the others are tunneled in memory through R_max
	 * neighbors each); post and early read every node they visit.  When s is
	 * tiny this grows past exact search over the few matching rows, and the
	 * planner prefers another index plus a sort (PipeANN-Filter's
	 * pre-filtering regime).
	 */
	L = gateann_search_list_size;
	sel = Max(costs.indexSelectivity, 1.0 / Max(index->tuples, 1.0));
	visited = Min(L * 1.2 / sel, Max(index->tuples, 1.0));
	reads = (gateann_filter_mode == GATEANN_FILTER_MODE_GATE) ?
		Min(visited, L * 1.2) : visited;
	get_tablespace_page_costs(index->reltablespace, &spc_random_page_cost, &spc_seq_page_cost);
	cached = index->pages > 0 ?
		Min(1.0, (double) effective_cache_size / (double) index->pages) : 1.0;
	read_cost = record_pages * (cached * spc_seq_page_cost + (1.0 - cached) * spc_random_page_cost);
	startup = reads * read_cost +
		(reads * R + (visited - reads) * R_max) * cpu_operator_cost * PQ_DISTANCE_COST +
		visited * cpu_index_tuple_cost;

	/* the rows the index conditions let through, beyond the first round's */
	rows = Max(index->tuples, 1.0) * sel;
	*indexStartupCost = startup;
	/*
	 * (genericcostestimate's total, every index page at a random page's
	 * cost, would count that reading twice: only its selectivity and page
	 * count are used)
	 */
	*indexTotalCost = startup + Max(rows - L, 0.0) * STREAM_ROW_READS * read_cost +
		rows * cpu_index_tuple_cost;
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = 0;
	*indexPages = costs.numIndexPages;
}
