/*
 * validate.c — amvalidate: does an operator class follow gateann's
 * conventions?
 *
 * The scan and the build read an index's operators by strategy number
 * alone, so an operator class must say what those numbers mean:
 *
 *   ordering (the vector column)  strategy 1 L2, 2 negative inner product,
 *                                 3 cosine distance; FOR ORDER BY a btree
 *                                 family that sorts float8; both arguments
 *                                 of the class's type, result float8
 *   search (the filter columns)   strategies 1-5 <, <=, =, >=, >;
 *                                 6-8 &&, @>, <@ on arrays; result bool
 *   support function 1            input type -> real[] (how a vector type
 *                                 other than real[] is read); required for
 *                                 an ordering class of any other type
 *
 * As core's validators do, a violation is reported with an INFO message
 * and makes the result false; the SQL function amvalidate() shows both.
 */
#include "postgres.h"

#include "gateann.h"
#include "vector.h"

#include "access/amvalidate.h"
#include "access/htup_details.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

/* the strategy numbers of ordering and of search operators */
#define VALIDATE_ORDER_MAX		3	/* 1 L2, 2 inner product, 3 cosine */
#define VALIDATE_SEARCH_MAX		13	/* 1-5 comparisons, 6-8 arrays, 9-11 jsonb keys,
										 * 12-13 jsonpath */

/* A float array read directly (vector.c) */
static bool
float_array_type(Oid type)
{
	return type == FLOAT4ARRAYOID || type == FLOAT8ARRAYOID;
}

/*
 * The query of a real[] or double precision[] column may come as another
 * array of numbers (vector.c converts each)
 */
static bool
query_array_type(Oid lefttype, Oid righttype)
{
	return float_array_type(lefttype) &&
		(float_array_type(righttype) || righttype == NUMERICARRAYOID ||
		 righttype == INT2ARRAYOID || righttype == INT4ARRAYOID ||
		 righttype == INT8ARRAYOID);
}

/*
 * Support functions: only number 1, input type -> real[].  Clears *ok on a
 * bad one; returns whether one converts the class's own input type.
 */
static bool
validate_support_functions(CatCList *proclist, const char *opfamilyname, Oid opcintype,
						   bool *ok)
{
	bool		class_converts = false;
	int			i;

	for (i = 0; i < proclist->n_members; i++)
	{
		HeapTuple	proctup = &proclist->members[i]->tuple;
		Form_pg_amproc procform = (Form_pg_amproc) GETSTRUCT(proctup);

		if (procform->amprocnum != GATEANN_TO_REAL_ARRAY_PROC)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("gateann operator family \"%s\" contains function %s with invalid support number %d",
							opfamilyname, format_procedure(procform->amproc),
							procform->amprocnum)));
			*ok = false;
			continue;
		}
		if (!check_amproc_signature(procform->amproc, FLOAT4ARRAYOID, true, 1, 1,
									procform->amproclefttype))
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("gateann operator family \"%s\" contains function %s with wrong signature for support number %d",
							opfamilyname, format_procedure(procform->amproc),
							procform->amprocnum),
					 errdetail("Support function 1 takes the indexed type and returns real[].")));
			*ok = false;
			continue;
		}
		if (procform->amproclefttype == opcintype)
			class_converts = true;
	}
	return class_converts;
}

/*
 * Operators: ordering ones are distances, search ones are predicates.
 * Clears *ok on a bad one; returns whether one orders the class's own
 * input type.
 */
static bool
validate_operators(CatCList *oprlist, const char *opfamilyname, Oid opcintype, bool *ok)
{
	bool		class_orders = false;
	int			i;

	for (i = 0; i < oprlist->n_members; i++)
	{
		HeapTuple	oprtup = &oprlist->members[i]->tuple;
		Form_pg_amop oprform = (Form_pg_amop) GETSTRUCT(oprtup);
		bool		ordering = oprform->amoppurpose == AMOP_ORDER;
		int			max = ordering ? VALIDATE_ORDER_MAX : VALIDATE_SEARCH_MAX;

		if (oprform->amopstrategy < 1 || oprform->amopstrategy > max)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("gateann operator family \"%s\" contains %s operator %s with invalid strategy number %d",
							opfamilyname, ordering ? "ordering" : "search",
							format_operator(oprform->amopopr), oprform->amopstrategy),
					 errdetail(ordering ?
							   "Ordering operators use strategies 1 (L2), 2 (inner product) and 3 (cosine)." :
							   "Search operators use strategies 1-5 (<, <=, =, >=, >), 6-8 (&&, @>, <@), 9-11 (?, ?|, ?&) and 12-13 (@@, @?).")));
			*ok = false;
			continue;
		}
		if (ordering)
		{
			if (oprform->amoplefttype == opcintype)
				class_orders = true;
			if (!OidIsValid(oprform->amopsortfamily) ||
				!opfamily_can_sort_type(oprform->amopsortfamily, FLOAT8OID))
			{
				ereport(INFO,
						(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
						 errmsg("gateann operator family \"%s\" contains ordering operator %s without FOR ORDER BY a float8 sort family",
								opfamilyname, format_operator(oprform->amopopr)),
						 errhint("Declare it FOR ORDER BY float_ops.")));
				*ok = false;
			}
			if (!check_amop_signature(oprform->amopopr, FLOAT8OID,
									  oprform->amoplefttype, oprform->amoprighttype) ||
				(oprform->amoplefttype != oprform->amoprighttype &&
				 !query_array_type(oprform->amoplefttype, oprform->amoprighttype)))
			{
				ereport(INFO,
						(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
						 errmsg("gateann operator family \"%s\" contains ordering operator %s with wrong signature",
								opfamilyname, format_operator(oprform->amopopr)),
						 errdetail("A distance takes two values of the indexed type (a real[] or double precision[] column also a query of the other, numeric[] or an integer array) and returns float8.")));
				*ok = false;
			}
		}
		else if (!check_amop_signature(oprform->amopopr, BOOLOID,
									   oprform->amoplefttype, oprform->amoprighttype))
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("gateann operator family \"%s\" contains search operator %s with wrong signature",
							opfamilyname, format_operator(oprform->amopopr)),
					 errdetail("A search operator returns boolean.")));
			*ok = false;
		}
	}
	return class_orders;
}

bool
gateann_validate(Oid opclassoid)
{
	bool		result = true;
	HeapTuple	classtup;
	Form_pg_opclass classform;
	Oid			opfamilyoid;
	Oid			opcintype;
	char	   *opclassname;
	HeapTuple	familytup;
	Form_pg_opfamily familyform;
	char	   *opfamilyname;
	CatCList   *proclist,
			   *oprlist;
	bool		class_orders;
	bool		class_converts;

	classtup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	if (!HeapTupleIsValid(classtup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	classform = (Form_pg_opclass) GETSTRUCT(classtup);
	opfamilyoid = classform->opcfamily;
	opcintype = classform->opcintype;
	opclassname = NameStr(classform->opcname);

	familytup = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(opfamilyoid));
	if (!HeapTupleIsValid(familytup))
		elog(ERROR, "cache lookup failed for operator family %u", opfamilyoid);
	familyform = (Form_pg_opfamily) GETSTRUCT(familytup);
	opfamilyname = NameStr(familyform->opfname);

	oprlist = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(opfamilyoid));
	proclist = SearchSysCacheList1(AMPROCNUM, ObjectIdGetDatum(opfamilyoid));

	class_converts = validate_support_functions(proclist, opfamilyname, opcintype, &result);
	class_orders = validate_operators(oprlist, opfamilyname, opcintype, &result);

	/* a vector class of a type other than a float array says how to read it */
	if (class_orders && !float_array_type(opcintype) && !class_converts)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("gateann operator class \"%s\" orders values of type %s but has no support function 1",
						opclassname, format_type_be(opcintype)),
				 errdetail("Support function 1 converts the indexed type to real[].")));
		result = false;
	}

	ReleaseCatCacheList(proclist);
	ReleaseCatCacheList(oprlist);
	ReleaseSysCache(familytup);
	ReleaseSysCache(classtup);
	return result;
}
