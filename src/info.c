/*
 * info.c — SQL functions reporting on indexes and scans:
 * gateann_last_scan(), gateann_index_info(regclass) and gateann_graph(regclass).
 */
#include "postgres.h"

#include "gateann.h"
#include "meta.h"
#include "page.h"
#include "record_cache.h"
#include "store.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(gateann_last_scan);
PG_FUNCTION_INFO_V1(gateann_index_info);
PG_FUNCTION_INFO_V1(gateann_prewarm);
PG_FUNCTION_INFO_V1(gateann_record_cache_info);
PG_FUNCTION_INFO_V1(gateann_graph);

GateannScanStats gateann_last_scan_stats = {.io_method = "none", .strategy = "none"};

Datum
gateann_last_scan(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[23];
	bool		nulls[23] = {0};
	GateannScanStats *s = &gateann_last_scan_stats;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	values[0] = Int64GetDatum(s->visited);
	values[1] = Int64GetDatum(s->reads);
	values[2] = Int64GetDatum(s->buffer_hits);
	values[3] = Int64GetDatum(s->tunneled);
	values[4] = Int64GetDatum(s->filter_checks);
	values[5] = Int64GetDatum(s->filter_false_positives);
	values[6] = Int64GetDatum(s->exact_distances);
	values[7] = Int64GetDatum(s->pq_distances);
	values[8] = Int64GetDatum(s->returned);
	values[9] = Int64GetDatum(s->io_wait_us);
	values[10] = Int64GetDatum(s->tunnel_us);
	values[11] = Int64GetDatum(s->compute_us);
	values[12] = CStringGetTextDatum(s->io_method ? s->io_method : "none");
	values[13] = BoolGetDatum(s->io_direct);
	values[14] = CStringGetTextDatum(s->strategy ? s->strategy : "none");
	values[15] = Int64GetDatum(s->recoveries);
	values[16] = BoolGetDatum(s->budget_exhausted);
	values[17] = Int64GetDatum(s->skipped);
	values[18] = Int64GetDatum(s->resident_hits);
	values[19] = Int64GetDatum(s->page_cache_hits);
	values[20] = Int64GetDatum(s->cache_hits);
	values[21] = Int64GetDatum(s->page_hits);
	values[22] = Int64GetDatum(s->page_search_results);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * The shared record cache (record_cache.h): its size, the records it holds
 * and their bytes; since the server started, lookups, hits, copies found
 * stale (the record had changed) and copies stored; the hit rate (NULL
 * before the first lookup).  All zero without the cache.
 */
Datum
gateann_record_cache_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[8];
	bool		nulls[8] = {0};
	GateannRecordCacheStats st;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	gateann_record_cache_stats(&st);
	values[0] = Int64GetDatum(st.size_bytes);
	values[1] = Int64GetDatum(st.records);
	values[2] = Int64GetDatum(st.record_bytes);
	values[3] = Int64GetDatum(st.lookups);
	values[4] = Int64GetDatum(st.hits);
	values[5] = Int64GetDatum(st.stale);
	values[6] = Int64GetDatum(st.stores);
	if (st.lookups > 0)
		values[7] = Float8GetDatum((double) st.hits / st.lookups);
	else
		nulls[7] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * May the current user `access` the gateann index on table heapoid?  As
 * pg_prewarm and amcheck: reading needs SELECT on the table; a check walking
 * the whole index (and holding off its writers meanwhile) ownership of the
 * table or membership in pg_maintain (PostgreSQL 17 on) or pg_monitor; loading
 * stores into shared memory, where they evict other indexes', ownership or
 * pg_maintain.
 */
static void
check_access(Oid heapoid, Oid indexoid, GateannAccess access)
{
	Oid			role = GetUserId();
	bool		ok;
	const char *needed;

	if (access == GATEANN_ACCESS_READ)
	{
		ok = pg_class_aclcheck(heapoid, role, ACL_SELECT) == ACLCHECK_OK;
		needed = "SELECT on its table";
	}
	else
	{
		ok = gateann_relation_owned_by(heapoid, role);
#ifdef GATEANN_HAVE_PG_MAINTAIN
		ok = ok || has_privs_of_role(role, ROLE_PG_MAINTAIN);
		needed = access == GATEANN_ACCESS_CHECK ?
			"ownership of its table, or membership in pg_maintain or pg_monitor" :
			"ownership of its table, or membership in pg_maintain";
#else
		needed = access == GATEANN_ACCESS_CHECK ?
			"ownership of its table, or membership in pg_monitor" :
			"ownership of its table";
#endif
		if (access == GATEANN_ACCESS_CHECK)
			ok = ok || has_privs_of_role(role, ROLE_PG_MONITOR);
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for index \"%s\"", get_rel_name(indexoid)),
				 errdetail("This needs %s.", needed)));
}

Relation
gateann_open_index(Oid relid, LOCKMODE lockmode, GateannAccess access)
{
	Oid			heapoid = IndexGetRelation(relid, true);
	Relation	rel;

	/* before any lock: a role without rights must not even hold off writers */
	if (OidIsValid(heapoid))
		check_access(heapoid, relid, access);

	/*
	 * The table before its index, as every other path takes them (amcheck
	 * too): taking the index first could deadlock with a session that holds
	 * the table and waits for the index.  Held until the transaction ends.
	 */
	if (OidIsValid(heapoid))
		LockRelationOid(heapoid, AccessShareLock);
	rel = try_relation_open(relid, lockmode);

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));

	/* dropped and its OID reused between the lookup and the locks */
	if (heapoid != IndexGetRelation(relid, true))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("index \"%s\" no longer belongs to the table it was looked up with",
						RelationGetRelationName(rel)),
				 errhint("Run the call again.")));
	if (rel->rd_rel->relkind != RELKIND_INDEX ||
		rel->rd_rel->relam != get_index_am_oid("gateann", false))
	{
		char	   *name = pstrdup(RelationGetRelationName(rel));
		bool		partitioned = rel->rd_rel->relkind == RELKIND_PARTITIONED_INDEX &&
			rel->rd_rel->relam == get_index_am_oid("gateann", false);

		relation_close(rel, lockmode);
		if (partitioned)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("\"%s\" is a partitioned gateann index, which holds no data itself", name),
					 errhint("Call the function on the index of each partition: SELECT relid FROM pg_partition_tree('%s') WHERE isleaf.",
							 name)));
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a gateann index", name)));
	}
	if (!rel->rd_index->indisvalid)
	{
		char	   *name = pstrdup(RelationGetRelationName(rel));

		relation_close(rel, lockmode);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("gateann index \"%s\" is not valid", name),
				 errdetail("A CREATE INDEX CONCURRENTLY or REINDEX CONCURRENTLY that failed or is still running leaves an invalid index: it may not have been built."),
				 errhint("REINDEX INDEX %s, or drop it and create it again.", quote_identifier(name))));
	}
	return rel;
}

Datum
gateann_index_info(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Relation	index;
	GateannMetaPageData meta;
	GateannOptions *opts;
	TupleDesc	tupdesc;
	Datum		values[23];
	bool		nulls[23] = {0};
	int			r_max;
	bool		loaded,
				shared = false;
	Size		bytes;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	index = gateann_open_index(relid, AccessShareLock, GATEANN_ACCESS_READ);
	gateann_read_meta(index, &meta);
	opts = gateann_get_options(index);
	r_max = gateann_tunnel_neighbors(opts, &meta);
	loaded = gateann_store_loaded(index, &meta, &shared, &bytes);

	values[0] = Int64GetDatum(meta.nnodes);
	values[1] = Int64GetDatum(GATEANN_LIVE_NODES(&meta));
	values[2] = Int64GetDatum(meta.ndeleted);
	values[3] = Int64GetDatum(RelationGetNumberOfBlocks(index));
	values[4] = Int32GetDatum(meta.dims);
	values[5] = CStringGetTextDatum(gateann_metric_name(meta.metric));
	values[6] = Int32GetDatum(meta.max_neighbors);
	values[7] = Int32GetDatum(meta.pq_subspaces);
	values[8] = Int32GetDatum(r_max);
	values[9] = Int64GetDatum((int64) gateann_store_pq_bytes(meta.nnodes, meta.dims,
															  meta.pq_subspaces));
	values[10] = Int64GetDatum((int64) gateann_store_neighbor_bytes(meta.nnodes, r_max));
	values[11] = Int64GetDatum((int64) gateann_store_filter_bytes(&meta));
	values[12] = BoolGetDatum(loaded);
	values[13] = BoolGetDatum(loaded && shared);
	values[14] = Int64GetDatum((int64) (meta.build_id & INT64CONST(0x7FFFFFFFFFFFFFFF)));
	values[15] = Int64GetDatum(meta.nfree);
	values[16] = Int64GetDatum(meta.pq_trained_rows);
	values[17] = Int32GetDatum(meta.nnodes > 0 ? Max(meta.nentries, 1) : 0);

	/*
	 * Live nodes no walk from the entry points over the neighbor store's
	 * rows reaches: only when the stores are loaded already (gateann_verify
	 * checks the records themselves).
	 */
	if (loaded && meta.nnodes > 0)
	{
		GateannStore *store = gateann_store_get(index, &meta);
		uint8	   *reached = palloc_extended(((Size) meta.nnodes + 7) / 8,
												  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);

		values[18] = Int64GetDatum(gateann_store_unreachable(store, &meta, reached));
		pfree(reached);
	}
	else if (meta.nnodes == 0)
		values[18] = Int64GetDatum(0);
	else
		nulls[18] = true;

	/* the build's probe (graph.h), when it ran */
	values[19] = Float4GetDatum(meta.build_recall);
	values[20] = Int32GetDatum(meta.build_recall_list);
	nulls[19] = nulls[20] = meta.build_recall_list <= 0;

	/* how records hold vectors, and with halves the bound's allowance */
	values[21] = CStringGetTextDatum(meta.record_precision == GATEANN_PRECISION_HALF ?
									 "half" : "single");
	values[22] = Float4GetDatum(meta.record_error);

	relation_close(index, AccessShareLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * gateann_prewarm(regclass): load the in-memory stores now (shared ones
 * when the library is preloaded) and return their size in bytes.
 */
Datum
gateann_prewarm(PG_FUNCTION_ARGS)
{
	Relation	index = gateann_open_index(PG_GETARG_OID(0), AccessShareLock,
										   GATEANN_ACCESS_MAINTAIN);
	GateannMetaPageData meta;
	GateannStore *store;
	int64		bytes;

	gateann_read_meta(index, &meta);
	store = gateann_store_get(index, &meta);
	bytes = (int64) store->bytes;
	relation_close(index, AccessShareLock);
	PG_RETURN_INT64(bytes);
}

/*
 * gateann_graph(regclass): one row per node of the graph -- its id, its
 * row's heap TID, whether that row is deleted (still a node other searches
 * cross), whether it is one of the entry points, and its neighbor list in
 * the record's order (the first tunnel_neighbors are what a tunneling walk
 * follows).  Free slots and tail records, which are outside the graph, are
 * left out.  For looking at a graph and for studies of it outside the server
 * (bench/gateann_bench/scaleout_sim.py).
 *
 * The records are read through the buffer manager one at a time under
 * AccessShareLock, as a scan reads them: a list a writer changes meanwhile
 * comes out as it was when read, so the rows are one consistent graph only
 * when nothing writes.  Needs what gateann_verify needs (the table's owner,
 * pg_maintain or pg_monitor): the rows expose every heap TID.
 */
Datum
gateann_graph(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	index;
	GateannMetaPageData meta;
	uint8	   *entry_map;
	char	   *rec;
	Datum	   *nbr_datums;
	uint32		id;
	uint32		i;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	index = gateann_open_index(PG_GETARG_OID(0), AccessShareLock, GATEANN_ACCESS_CHECK);
	gateann_read_meta(index, &meta);
	entry_map = palloc0(((Size) meta.nnodes + 7) / 8);
	for (i = 0; i < Min(meta.nentries, (uint32) GATEANN_MAX_ENTRIES); i++)
		if (meta.entries[i] < meta.nnodes)
			entry_map[meta.entries[i] >> 3] |= 1 << (meta.entries[i] & 7);
	rec = palloc(meta.record_size);
	nbr_datums = palloc(sizeof(Datum) * Max(meta.max_neighbors, 1));
	for (id = 0; id < meta.nnodes; id++)
	{
		GateannNodeHeader *hdr;
		const uint32 *nbrs;
		Datum		values[5];
		bool		nulls[5] = {0};
		int			n;

		if ((id & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		gateann_read_record(index, &meta, id, rec, NULL);
		hdr = GateannRecordHeader(rec);
		if (hdr->node_id != id)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gateann index \"%s\" is damaged: slot %u holds node %u",
							RelationGetRelationName(index), id, hdr->node_id),
					 errhint("Run gateann_verify() on it; REINDEX repairs it.")));
		if (hdr->flags & (GATEANN_NODE_FREE | GATEANN_NODE_TAIL))
			continue;
		nbrs = GateannRecordNeighbors(&meta, rec);
		n = Min((int) hdr->nneighbors, meta.max_neighbors);
		for (i = 0; i < (uint32) n; i++)
			nbr_datums[i] = Int64GetDatum((int64) nbrs[i]);
		values[0] = Int64GetDatum((int64) id);
		values[1] = PointerGetDatum(&hdr->heap_tid);
		values[2] = BoolGetDatum((hdr->flags & GATEANN_NODE_DELETED) != 0);
		values[3] = BoolGetDatum((entry_map[id >> 3] & (1 << (id & 7))) != 0);
		values[4] = PointerGetDatum(construct_array(nbr_datums, n, INT8OID, 8,
													FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	relation_close(index, AccessShareLock);
	return (Datum) 0;
}
