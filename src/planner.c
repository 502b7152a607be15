/*
 * planner.c — filter conditions the core planner leaves out of ordered
 * gateann scans: "= ANY" and boolean columns before PostgreSQL 17, and on
 * every version jsonb_path_match() calls and one key's equality on a jsonb
 * filter column.
 *
 * Before 17 the core planner never makes a ScalarArrayOpExpr on a later
 * index column an index condition of a scan whose order it uses: for a
 * btree such a condition breaks the column order.  It therefore builds the
 * ORDER BY-distance path of a gateann index without "tenant = ANY($1)" and
 * leaves the condition to the executor above the scan.  A gateann scan's
 * order comes from its ORDER BY operator, not from its columns, so the
 * condition is as safe here as any other: without it the scan walks
 * unfiltered, and the executor throws away most of what it reads (and
 * strict_order's rounds see rows the filter rejects).  PostgreSQL 15 also
 * matches a boolean column's "flag", "NOT flag", "flag IS TRUE" and "flag
 * IS FALSE" (the planner turns "flag = true" into "flag") only against
 * btree and hash boolean operator families, so they stay above the scan
 * too; where a version's core already matches them, the clause is in the
 * path and nothing is added.  From 17 on the core does both itself.
 *
 * A function call is never an index condition for the core; langchain's
 * PGVector writes every metadata filter as jsonb_path_match(column, path,
 * vars) (jsonb_path_match_tz alike), which the jsonb operator class can check as "column @@ path" once
 * the variables are written into the path (path_match_index_clause): by
 * the planner when they are constants, else by the SQL function
 * gateann_path_match_condition when the scan starts (a generic plan).
 * Nor is one key's equality, "meta -> 'k' = value" or "meta ->> 'k' =
 * value" (or IN a list), a condition on the column meta for the core: it
 * becomes "meta @> {k: value}" or "meta @@ path" (key_equality_index_clause),
 * with the key a parameter too, which no expression column (meta ->> 'k')
 * can match.
 *
 * After the core paths exist, every ordered gateann index path of a base
 * relation is replaced by the same path with those conditions added as
 * index conditions (a boolean one becomes "flag = true" or "flag =
 * false").  With two gateann indexes on the same vector column the core's
 * two paths (neither with those conditions) cost the same and add_path
 * keeps one: the other is built again here, from the kept one's order, with
 * every condition it takes.  Nothing else changes: the index AM receives
 * them as SK_SEARCHARRAY keys and equality keys, which it supports on
 * every version.
 */
#include "postgres.h"

#include "gateann.h"
#include "compat.h"
#include "filter.h"

#include "catalog/pg_operator.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parse_func.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

/* An exact index clause on column indexcol for rinfo, checked as indexqual */
static IndexClause *
new_index_clause(RestrictInfo *rinfo, RestrictInfo *indexqual, int indexcol)
{
	IndexClause *iclause = makeNode(IndexClause);

	iclause->rinfo = rinfo;
	iclause->indexquals = list_make1(indexqual);
	iclause->lossy = false;
	iclause->indexcol = indexcol;
	iclause->indexcols = NIL;
	return iclause;
}

/*
 * The index clause for rinfo, "indexkey opno rightop" on column indexcol
 * of index (ScalarArrayOpExpr or OpExpr alike), or NULL: the tests of the
 * core's own matching, the commuted form left out.
 */
static IndexClause *
operand_index_clause(PlannerInfo *root, RestrictInfo *rinfo, IndexOptInfo *index,
					 int indexcol, Node *leftop, Node *rightop, Oid opno, Oid inputcollid)
{
	Oid			idxcoll = index->indexcollations[indexcol];

	if (!match_index_to_operand(leftop, indexcol, index))
		return NULL;
	if (bms_is_member(index->rel->relid, pull_varnos(root, rightop)) ||
		contain_volatile_functions(rightop))
		return NULL;
	if (OidIsValid(idxcoll) && idxcoll != inputcollid)
		return NULL;
	if (!op_in_opfamily(opno, index->opfamily[indexcol]))
		return NULL;

	return new_index_clause(rinfo, rinfo, indexcol);
}

#ifdef GATEANN_NEEDS_SAOP_ORDERED_PATHS
/* "indexkey op ANY (array)" on column indexcol, or NULL */
static IndexClause *
saop_index_clause(PlannerInfo *root, RestrictInfo *rinfo, IndexOptInfo *index,
				  int indexcol)
{
	ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) rinfo->clause;

	if (!saop->useOr)
		return NULL;			/* ALL: not an index condition */
	return operand_index_clause(root, rinfo, index, indexcol, (Node *) linitial(saop->args),
								(Node *) lsecond(saop->args), saop->opno, saop->inputcollid);
}

#endif

/*
 * "column op condition" on column indexcol as a lossy index clause for
 * rinfo: it matches at least the rows rinfo does, and the executor checks
 * rinfo itself on the rows the index returns.
 */
static IndexClause *
lossy_index_clause(PlannerInfo *root, RestrictInfo *rinfo, int indexcol, Oid opno,
				   Expr *column, Expr *condition)
{
	Expr	   *op = make_opclause(opno, BOOLOID, false, column, condition,
								   InvalidOid, InvalidOid);
	IndexClause *iclause = new_index_clause(rinfo, make_simple_restrictinfo(root, op), indexcol);

	iclause->lossy = true;
	return iclause;
}

/*
 * Known when the scan starts: no column of any relation, nothing volatile.
 * The executor evaluates such an index condition's comparison value once
 * per scan (a runtime key), so it may hold a generic plan's parameters.
 */
static bool
known_at_scan_start(Node *expr)
{
	return !contain_var_clause(expr) && !contain_volatile_functions(expr);
}

/*
 * A call of the extension's SQL function `name` (found in the schema of
 * column indexcol's operator family) on two arguments, or NULL when that
 * schema has none.
 */
static Expr *
extension_call(IndexOptInfo *index, int indexcol, const char *name, Oid rettype,
			   Oid argtype1, Expr *arg1, Oid argtype2, Expr *arg2)
{
	Oid			argtypes[2] = {argtype1, argtype2};
	HeapTuple	tup;
	char	   *schema;
	Oid			fn;

	tup = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(index->opfamily[indexcol]));
	if (!HeapTupleIsValid(tup))
		return NULL;
	schema = get_namespace_name(((Form_pg_opfamily) GETSTRUCT(tup))->opfnamespace);
	ReleaseSysCache(tup);
	if (schema == NULL)
		return NULL;
	fn = LookupFuncName(list_make2(makeString(schema), makeString(pstrdup(name))),
						2, argtypes, true);
	if (!OidIsValid(fn))
		return NULL;
	return (Expr *) makeFuncExpr(fn, rettype, list_make2(arg1, arg2), InvalidOid,
								 InvalidOid, COERCE_EXPLICIT_CALL);
}

/*
 * The call gateann_path_match_condition(path, vars), when path and vars
 * are known when the scan starts.  Else NULL.
 */
static Expr *
path_match_condition_call(IndexOptInfo *index, int indexcol, Expr *path, Expr *vars)
{
	if (exprType((Node *) path) != JSONPATHOID || exprType((Node *) vars) != JSONBOID ||
		!known_at_scan_start((Node *) path) || !known_at_scan_start((Node *) vars))
		return NULL;
	return extension_call(index, indexcol, "gateann_path_match_condition", JSONPATHOID,
						  JSONPATHOID, path, JSONBOID, vars);
}

/*
 * jsonb_path_match(column, path, vars), as langchain's PGVector writes each
 * metadata condition, on a jsonb column indexcol: the index clause
 * "column @@ path" with vars written into the path -- now
 * (gateann_jsonpath_bind_vars) when both are constants, else when the scan
 * starts (path_match_condition_call: a generic plan's parameters) -- or
 * NULL.  The clause is lossy, so the
 * executor checks the call itself on the rows the index returns: what the
 * call matches, the operator matches too (it only also turns errors into
 * no match).  jsonb_path_match_tz differs from it only where a datetime
 * method converts a value, and a path with any method is never written in
 * (gateann_jsonpath_bind_vars; gateann_path_match_condition gives `true`),
 * so it is taken the same way.
 */
static IndexClause *
path_match_index_clause(PlannerInfo *root, RestrictInfo *rinfo, IndexOptInfo *index,
						int indexcol)
{
	FuncExpr   *call = (FuncExpr *) rinfo->clause;
	Const	   *path;
	Const	   *vars;
	Oid			opno;
	JsonPath   *bound;
	Expr	   *condition;

	if (!IsA(call, FuncExpr) ||
		(call->funcid != F_JSONB_PATH_MATCH && call->funcid != F_JSONB_PATH_MATCH_TZ) ||
		list_length(call->args) < 3 ||
		!match_index_to_operand(linitial(call->args), indexcol, index))
		return NULL;
	path = (Const *) lsecond(call->args);
	vars = (Const *) lthird(call->args);
	opno = get_opfamily_member(index->opfamily[indexcol], JSONBOID, JSONPATHOID,
							   STRAT_PATH_MATCH);
	if (!OidIsValid(opno))
		return NULL;
	if (IsA(path, Const) && IsA(vars, Const))
	{
		/* written in now (a NULL argument: the call matches nothing anyway) */
		if (path->constisnull || vars->constisnull)
			return NULL;
		bound = gateann_jsonpath_bind_vars(DatumGetJsonPathP(path->constvalue),
										   DatumGetJsonbP(vars->constvalue));
		if (bound == NULL)
			return NULL;
		condition = (Expr *) makeConst(JSONPATHOID, -1, InvalidOid, -1,
									   PointerGetDatum(bound), false, false);
	}
	else
	{
		/* a parameter: written in when the scan starts */
		condition = path_match_condition_call(index, indexcol, (Expr *) path, (Expr *) vars);
		if (condition == NULL)
			return NULL;
	}
	return lossy_index_clause(root, rinfo, indexcol, opno, (Expr *) linitial(call->args),
							  condition);
}

/* Is node "column -> key" (jsonb) or, with as_text, "column ->> key" (text)? */
static bool
is_key_field(Node *node, bool as_text)
{
	OpExpr	   *field = (OpExpr *) node;

	return IsA(field, OpExpr) && list_length(field->args) == 2 &&
		get_opcode(field->opno) == (as_text ? F_JSONB_OBJECT_FIELD_TEXT : F_JSONB_OBJECT_FIELD);
}

/*
 * One key's equality on a jsonb column indexcol, as applications write it:
 * "column -> key = value" (jsonb; Django's meta__k = v) and "column ->> key
 * = value" (text; SQLAlchemy's .astext, Django's KeyTextTransform), either
 * side first, and either with "IN (...)" / "= ANY(values)"; key and value
 * constants or a generic plan's parameters.  The index clause is "column
 * @> gateann_key_value_condition(key, value)", "column @@
 * gateann_key_text_condition(key, value)" or, for a list, "column @@
 * gateann_key_any_condition(key, values)" (filter_jsonb.c), folded into a
 * constant now when both are; or NULL.  It matches at least the rows the
 * equality does, and is lossy: the executor checks the equality on the
 * rows the index returns.  A key given as a parameter is the reason to
 * take the whole column: an expression column (meta ->> 'k') matches only
 * its own constant key.  A text equality under a nondeterministic
 * collation matches strings the path does not: not taken.
 */
static IndexClause *
key_equality_index_clause(PlannerInfo *root, RestrictInfo *rinfo, IndexOptInfo *index,
						  int indexcol)
{
	Node	   *clause = (Node *) rinfo->clause;
	List	   *args;
	Oid			eqop;
	Oid			collation;
	bool		list;
	OpExpr	   *field;
	Node	   *value;
	Node	   *key;
	bool		as_text;
	Oid			value_type;
	Oid			opno;
	Expr	   *condition;

	if (IsA(clause, OpExpr))
	{
		args = ((OpExpr *) clause)->args;
		eqop = ((OpExpr *) clause)->opno;
		collation = ((OpExpr *) clause)->inputcollid;
		list = false;
	}
	else if (IsA(clause, ScalarArrayOpExpr) && ((ScalarArrayOpExpr *) clause)->useOr)
	{
		args = ((ScalarArrayOpExpr *) clause)->args;
		eqop = ((ScalarArrayOpExpr *) clause)->opno;
		collation = ((ScalarArrayOpExpr *) clause)->inputcollid;
		list = true;
	}
	else
		return NULL;
	if (list_length(args) != 2)
		return NULL;
	switch (get_opcode(eqop))
	{
		case F_TEXTEQ:
			as_text = true;
			value_type = list ? TEXTARRAYOID : TEXTOID;
			break;
		case F_JSONB_EQ:
			as_text = false;
			value_type = list ? JSONBARRAYOID : JSONBOID;
			break;
		default:
			return NULL;
	}
	if (is_key_field(linitial(args), as_text))
	{
		field = linitial(args);
		value = lsecond(args);
	}
	else if (!list && is_key_field(lsecond(args), as_text))
	{
		field = lsecond(args);
		value = linitial(args);
	}
	else
		return NULL;
	key = lsecond(field->args);
	if (!match_index_to_operand(linitial(field->args), indexcol, index) ||
		exprType(key) != TEXTOID || exprType(value) != value_type ||
		!known_at_scan_start(key) || !known_at_scan_start(value))
		return NULL;
	if (as_text && OidIsValid(collation) && !get_collation_isdeterministic(collation))
		return NULL;
	if (list || as_text)
	{
		opno = get_opfamily_member(index->opfamily[indexcol], JSONBOID, JSONPATHOID,
								   STRAT_PATH_MATCH);
		condition = list ?
			extension_call(index, indexcol, "gateann_key_any_condition", JSONPATHOID,
						   TEXTOID, (Expr *) key, ANYARRAYOID, (Expr *) value) :
			extension_call(index, indexcol, "gateann_key_text_condition", JSONPATHOID,
						   TEXTOID, (Expr *) key, TEXTOID, (Expr *) value);
	}
	else
	{
		opno = get_opfamily_member(index->opfamily[indexcol], JSONBOID, JSONBOID,
								   STRAT_CONTAINS);
		condition = extension_call(index, indexcol, "gateann_key_value_condition", JSONBOID,
								   TEXTOID, (Expr *) key, JSONBOID, (Expr *) value);
	}
	if (!OidIsValid(opno) || condition == NULL)
		return NULL;
	condition = (Expr *) eval_const_expressions(root, (Node *) condition);
	return lossy_index_clause(root, rinfo, indexcol, opno, (Expr *) linitial(field->args),
							  condition);
}

#ifdef GATEANN_NEEDS_SAOP_ORDERED_PATHS
/*
 * The index clause for a boolean condition on column indexcol, or NULL:
 * "flag" and "flag IS TRUE" become "flag = true", "NOT flag" and "flag IS
 * FALSE" become "flag = false", as the core's boolean matching does for
 * btree and hash operator families.
 */
static IndexClause *
bool_index_clause(PlannerInfo *root, RestrictInfo *rinfo, IndexOptInfo *index,
				  int indexcol)
{
	Node	   *clause = (Node *) rinfo->clause;
	Node	   *operand;
	bool		value;
	Expr	   *op;

	if (IsA(clause, BooleanTest))
	{
		BooleanTest *btest = (BooleanTest *) clause;

		if (btest->booltesttype != IS_TRUE && btest->booltesttype != IS_FALSE)
			return NULL;
		operand = (Node *) btest->arg;
		value = (btest->booltesttype == IS_TRUE);
	}
	else if (is_notclause(clause))
	{
		operand = (Node *) get_notclausearg((Expr *) clause);
		value = false;
	}
	else
	{
		operand = clause;
		value = true;
	}
	if (exprType(operand) != BOOLOID ||
		!match_index_to_operand(operand, indexcol, index) ||
		!op_in_opfamily(BooleanEqualOperator, index->opfamily[indexcol]))
		return NULL;

	op = make_opclause(BooleanEqualOperator, BOOLOID, false, (Expr *) operand,
					   (Expr *) makeBoolConst(value, false), InvalidOid, InvalidOid);
	return new_index_clause(rinfo, make_simple_restrictinfo(root, op), indexcol);
}

#endif

/*
 * "indexkey op constant" on column indexcol, or NULL: what the core
 * matches itself, for a path built here (below) from none.
 */
static IndexClause *
plain_index_clause(PlannerInfo *root, RestrictInfo *rinfo, IndexOptInfo *index,
				   int indexcol)
{
	OpExpr	   *op = (OpExpr *) rinfo->clause;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2)
		return NULL;
	return operand_index_clause(root, rinfo, index, indexcol, (Node *) linitial(op->args),
								(Node *) lsecond(op->args), op->opno, op->inputcollid);
}

static bool
has_clause(List *indexclauses, RestrictInfo *rinfo)
{
	ListCell   *lc;

	foreach(lc, indexclauses)
		if (((IndexClause *) lfirst(lc))->rinfo == rinfo)
			return true;
	return false;
}

/*
 * The clauses `have` of a path on index plus the "= ANY" and boolean ones
 * they lack (and, with `plain`, the plain ones too: a path built from
 * none), in index column order (which the executor and EXPLAIN expect);
 * NIL when no "= ANY" or boolean one is missing.
 */
static List *
clauses_with_missing(PlannerInfo *root, RelOptInfo *rel, IndexOptInfo *index, List *have,
					 bool plain)
{
	List	   *extra[INDEX_MAX_KEYS] = {0};
	bool		found = false;
	List	   *result = NIL;
	ListCell   *lc;
	int			col;

	/* (a partial index's indrestrictinfo lacks what its predicate implies) */
	foreach(lc, index->indrestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		bool		saop = IsA(rinfo->clause, ScalarArrayOpExpr);

		if (rinfo->pseudoconstant ||
			!restriction_is_securely_promotable(rinfo, rel) ||
			has_clause(have, rinfo))
			continue;
		/* column 0 is the vector */
		for (col = 1; col < index->nkeycolumns; col++)
		{
#ifdef GATEANN_NEEDS_SAOP_ORDERED_PATHS
			IndexClause *iclause = saop ?
				saop_index_clause(root, rinfo, index, col) :
				bool_index_clause(root, rinfo, index, col);
#else
			IndexClause *iclause = NULL;	/* the core has them */
#endif
			bool		missing;

			if (!iclause && !saop)
				iclause = path_match_index_clause(root, rinfo, index, col);
			if (!iclause)
				iclause = key_equality_index_clause(root, rinfo, index, col);
			missing = iclause != NULL;

			if (!iclause && plain && !saop)
				iclause = plain_index_clause(root, rinfo, index, col);
			if (iclause)
			{
				extra[col] = lappend(extra[col], iclause);
				found |= missing;
				break;
			}
		}
	}
	if (!found)
		return NIL;

	for (col = 0; col < index->nkeycolumns; col++)
	{
		foreach(lc, have)
		{
			IndexClause *iclause = (IndexClause *) lfirst(lc);

			if (iclause->indexcol == col)
				result = lappend(result, iclause);
		}
		result = list_concat(result, extra[col]);
	}
	return result;
}

/* Does index order by the same key, by the same distances, as `as`? */
static bool
same_order_key(IndexOptInfo *index, IndexOptInfo *as)
{
	return index->indexkeys[0] != 0 && index->indexkeys[0] == as->indexkeys[0] &&
		index->opfamily[0] == as->opfamily[0] && index->opcintype[0] == as->opcintype[0];
}

static void
gateann_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
						 RangeTblEntry *rte)
{
	Oid			amoid = InvalidOid;
	List	   *replacements = NIL;
	List	   *with_path = NIL;
	IndexPath  *model = NULL;
	ListCell   *lc;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);

	if (rel->reloptkind != RELOPT_BASEREL &&
		rel->reloptkind != RELOPT_OTHER_MEMBER_REL)
		return;
	if (rte->rtekind != RTE_RELATION || rel->indexlist == NIL ||
		rel->baserestrictinfo == NIL)
		return;

	foreach(lc, rel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);
		IndexPath  *ipath;
		List	   *clauses;

		if (!IsA(path, IndexPath))
			continue;
		ipath = (IndexPath *) path;
		/* ordered, and not parameterized (those keep the core's form) */
		if (ipath->indexorderbys == NIL || path->param_info != NULL)
			continue;
		/* (looked up only here: most plans have no ordered index path) */
		if (!OidIsValid(amoid))
			amoid = get_index_am_oid("gateann", true);
		if (ipath->indexinfo->relam != amoid)
			continue;
		with_path = lappend(with_path, ipath->indexinfo);
		if (model == NULL)
			model = ipath;
		clauses = clauses_with_missing(root, rel, ipath->indexinfo, ipath->indexclauses, false);
		if (clauses == NIL)
			continue;
		replacements = lappend(replacements,
							   create_index_path(root, ipath->indexinfo, clauses,
												 ipath->indexorderbys,
												 ipath->indexorderbycols,
												 path->pathkeys,
												 ipath->indexscandir,
												 path->pathtype == T_IndexOnlyScan,
												 NULL, 1.0, false));
		rel->pathlist = foreach_delete_current(rel->pathlist, lc);
	}

	/*
	 * Another gateann index on the same column: the core built its ordered
	 * path without those conditions too, and add_path kept only one of two
	 * such paths of equal cost.  Build that path again, with every
	 * condition the index takes, from the kept one's order.
	 */
	if (model != NULL)
		foreach(lc, rel->indexlist)
		{
			IndexOptInfo *index = lfirst_node(IndexOptInfo, lc);
			List	   *clauses;

			if (index->relam != amoid || list_member_ptr(with_path, index) ||
				!same_order_key(index, model->indexinfo) ||
				(index->indpred != NIL && !index->predOK))
				continue;
			clauses = clauses_with_missing(root, rel, index, NIL, true);
			if (clauses == NIL)
				continue;
			replacements = lappend(replacements,
								   create_index_path(root, index, clauses,
													 model->indexorderbys,
													 model->indexorderbycols,
													 model->path.pathkeys,
													 model->indexscandir,
													 false, NULL, 1.0, false));
		}
	foreach(lc, replacements)
		add_path(rel, (Path *) lfirst(lc));
}

void
gateann_planner_init(void)
{
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = gateann_set_rel_pathlist;
}
