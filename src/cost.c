/*
 * cost.c — amcostestimate.
 *
 * A search expands about L = gateann.search_list_size nodes, each one random
 * read of a record (pages_per_record pages) plus R PQ distances for its
 * neighbors.  That work is paid before the first row comes out, so it is
 * startup cost; the rest of the scan (streaming beyond L) is priced like
 * reading the whole index, which the LIMIT arithmetic scales down.
 *
 * Without ORDER BY a distance the index cannot be used at all.
 */
#include "postgres.h"

#include <math.h>

#include "gateann.h"

#include "access/relation.h"
#include "optimizer/optimizer.h"
#include "utils/rel.h"
#include "utils/float.h"
#include "utils/selfuncs.h"
#include "utils/spccache.h"

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
	int			R;
	double		L;
	double		expanded;
	double		record_pages;
	double		spc_random_page_cost;
	Cost		startup;

	if (path->indexorderbys == NIL)
	{
		*indexStartupCost = get_float8_infinity();
		*indexTotalCost = get_float8_infinity();
		*indexSelectivity = 0;
		*indexCorrelation = 0;
		*indexPages = 0;
#if PG_VERSION_NUM >= 180000
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
	relation_close(rel, NoLock);

	L = gateann_search_list_size;
	expanded = Min(L * 1.2, Max(index->tuples, 1.0));
	/* a record larger than a page (high dimensions) costs several reads */
	record_pages = Max(1.0, ceil((double) index->pages / Max(index->tuples, 1.0)));

	get_tablespace_page_costs(index->reltablespace, &spc_random_page_cost, NULL);
	startup = expanded * record_pages * spc_random_page_cost +
		expanded * R * cpu_operator_cost +
		expanded * cpu_index_tuple_cost;

	*indexStartupCost = startup;
	*indexTotalCost = startup + costs.indexTotalCost;
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = 0;
	*indexPages = costs.numIndexPages;
}
