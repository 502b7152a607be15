/*
 * filter_jsonb.c — the filter store's Bloom bits of a jsonb filter column.
 *
 * A node's 256 bits hold three bits for each of
 *   - a leaf: a scalar together with the path of object keys that leads to
 *     it, array positions left out (so that an array's elements share their
 *     array's path: containment ignores their order);
 *   - an existence item: a top-level object key, or a top-level string
 *     array element (what `?`, `?|` and `?&` find; a raw scalar string is a
 *     one-element array).
 * If a @> q, every leaf of q is a leaf of a: q's objects are found in a's
 * objects key by key, q's arrays' elements among a's arrays' elements, and
 * a scalar equals a scalar of the same path.  So a node whose bits miss a
 * bit of q's leaves cannot contain q, and one whose bits miss a key's
 * existence bits does not have the key; anything else is verified on the
 * record by the operator itself (filter_scan.c), as for array columns.
 * Equal scalars hash alike: strings and keys by their bytes (jsonb compares
 * them so), numbers by hash_numeric (1.0 = 1).
 *
 * A jsonpath query (@@, @?) needs the leaves of the equalities it requires:
 * `$.a.b == 1` matches only a value with the leaf (a.b, 1), in lax mode too,
 * where arrays on the way are unwrapped (their positions are left out of the
 * path as they are here).  Required are both sides of &&, and in an @? path
 * the predicate of each filter (`$.a ? (@.b == "x")`: (a.b, "x")); an @@
 * path's ||s give alternatives (a value needs the leaves of one side: the
 * node passes if its bits hold one side's); !, comparisons, methods and
 * wildcards require nothing we can tell.
 */
#include "postgres.h"

#include "filter.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/jsonpath.h"
#include "utils/lsyscache.h"

/* Seeds that keep the kinds of item apart */
#define JSONB_PATH_ROOT		0x6a736f6e	/* the path of the top level */
#define JSONB_EXISTS_SEED	0x65786973
#define JSONB_NULL_HASH		0x6e756c6c
#define JSONB_TRUE_HASH		0x74727565
#define JSONB_FALSE_HASH	0x66616c73
#define JSONB_NUMBER_SEED	0x6e756d62
#define JSONB_STRING_SEED	0x73747269

/* Paths are at most this deep for hashing; deeper levels share the last */
#define JSONB_MAX_DEPTH		64

static uint32
bytes_hash(const char *s, int len)
{
	return hash_bytes((const unsigned char *) s, len);
}

static uint32
scalar_hash(const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return JSONB_NULL_HASH;
		case jbvBool:
			return v->val.boolean ? JSONB_TRUE_HASH : JSONB_FALSE_HASH;
		case jbvNumeric:
			return hash_combine(JSONB_NUMBER_SEED,
								DatumGetUInt32(DirectFunctionCall1(hash_numeric,
																   NumericGetDatum(v->val.numeric))));
		case jbvString:
			return hash_combine(JSONB_STRING_SEED, bytes_hash(v->val.string.val, v->val.string.len));
		default:
			return 0;			/* not a scalar: not reached */
	}
}

uint32
gateann_filter_jsonb_key_hash(const char *key, int len)
{
	return hash_combine(JSONB_EXISTS_SEED, bytes_hash(key, len));
}

/*
 * Bits of j's leaves, and of its existence items too when `existence`
 * (a node's value: yes; a @> query: no).
 */
void
gateann_filter_jsonb_bits(Jsonb *j, bool existence, uint64 *bits)
{
	JsonbIterator *it = JsonbIteratorInit(&j->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	uint32		path[JSONB_MAX_DEPTH];
	bool		is_object[JSONB_MAX_DEPTH];
	int			depth = 0;		/* containers open */
	uint32		key = 0;
	bool		have_key = false;

	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		uint32		top = depth == 0 ? JSONB_PATH_ROOT : path[Min(depth, JSONB_MAX_DEPTH) - 1];

		switch (tok)
		{
			case WJB_BEGIN_OBJECT:
			case WJB_BEGIN_ARRAY:
				if (depth < JSONB_MAX_DEPTH)
				{
					path[depth] = have_key ? hash_combine(top, key) : top;
					is_object[depth] = tok == WJB_BEGIN_OBJECT;
				}
				depth++;
				have_key = false;
				break;
			case WJB_END_OBJECT:
			case WJB_END_ARRAY:
				depth--;
				break;
			case WJB_KEY:
				key = bytes_hash(v.val.string.val, v.val.string.len);
				have_key = true;
				if (existence && depth == 1)
					gateann_filter_jsonb_bloom_add(bits, gateann_filter_jsonb_key_hash(v.val.string.val,
																					   v.val.string.len));
				break;
			case WJB_VALUE:
				gateann_filter_jsonb_bloom_add(bits, hash_combine(hash_combine(top, key),
																  scalar_hash(&v)));
				have_key = false;
				break;
			case WJB_ELEM:
				gateann_filter_jsonb_bloom_add(bits, hash_combine(top, scalar_hash(&v)));
				if (existence && depth == 1 && !is_object[0] && v.type == jbvString)
					gateann_filter_jsonb_bloom_add(bits, gateann_filter_jsonb_key_hash(v.val.string.val,
																					   v.val.string.len));
				break;
			default:
				break;
		}
	}
}

/*
 * One step of a plain path: a key extends the path's hash, an array
 * accessor leaves it as it is (positions are not hashed); false for any
 * other step.
 */
static bool
jsonpath_plain_step(JsonPathItem *step, uint32 *hash)
{
	if (step->type == jpiKey)
	{
		int32		len;
		char	   *key = jspGetString(step, &len);

		*hash = hash_combine(*hash, bytes_hash(key, len));
		return true;
	}
	return step->type == jpiAnyArray || step->type == jpiIndexArray;
}

/*
 * The path of a chain of plain steps from $ (or @, the items at `current`
 * inside a filter); false for anything else.
 */
static bool
jsonpath_path_hash(JsonPathItem *item, const uint32 *current, uint32 *hash)
{
	JsonPathItem steps[2];
	JsonPathItem *at = item;
	int			k = 0;
	uint32		h;

	if (item->type == jpiRoot)
		h = JSONB_PATH_ROOT;
	else if (item->type == jpiCurrent && current != NULL)
		h = *current;
	else
		return false;
	while (jspGetNext(at, &steps[k]))
	{
		at = &steps[k];
		k ^= 1;
		if (!jsonpath_plain_step(at, &h))
			return false;
	}
	*hash = h;
	return true;
}

/* path == literal: the leaf's bits; false if the two are not that */
static bool
jsonpath_equality_bits(JsonPathItem *path, JsonPathItem *value, const uint32 *current,
					   uint64 *bits)
{
	JsonbValue	v;
	uint32		h;

	if (!jspIsScalar(value->type) || jspHasNext(value) ||
		!jsonpath_path_hash(path, current, &h))
		return false;
	switch (value->type)
	{
		case jpiNull:
			v.type = jbvNull;
			break;
		case jpiBool:
			v.type = jbvBool;
			v.val.boolean = jspGetBool(value);
			break;
		case jpiNumeric:
			v.type = jbvNumeric;
			v.val.numeric = jspGetNumeric(value);
			break;
		case jpiString:
			{
				int32		len;

				v.type = jbvString;
				v.val.string.val = jspGetString(value, &len);
				v.val.string.len = len;
				break;
			}
		default:
			return false;
	}
	gateann_filter_jsonb_bloom_add(bits, hash_combine(h, scalar_hash(&v)));
	return true;
}

/* The leaves predicate `pred` requires; returns whether there was one */
static bool
jsonpath_predicate_bits(JsonPathItem *pred, const uint32 *current, uint64 *bits)
{
	JsonPathItem left,
				right;
	bool		found;

	check_stack_depth();
	switch (pred->type)
	{
		case jpiAnd:
			jspGetLeftArg(pred, &left);
			jspGetRightArg(pred, &right);
			found = jsonpath_predicate_bits(&left, current, bits);
			return jsonpath_predicate_bits(&right, current, bits) || found;
		case jpiEqual:
			jspGetLeftArg(pred, &left);
			jspGetRightArg(pred, &right);
			return jsonpath_equality_bits(&left, &right, current, bits) ||
				jsonpath_equality_bits(&right, &left, current, bits);
		default:
			return false;
	}
}

/* An @? path: the predicates of its filters, each on the items before it */
static bool
jsonpath_exists_bits(JsonPathItem *root, uint64 *bits)
{
	JsonPathItem steps[2];
	JsonPathItem *at = root;
	int			k = 0;
	uint32		h = JSONB_PATH_ROOT;
	bool		found = false;

	if (root->type != jpiRoot)
		return false;
	while (jspGetNext(at, &steps[k]))
	{
		at = &steps[k];
		k ^= 1;
		if (at->type == jpiFilter)
		{
			JsonPathItem pred;

			jspGetArg(at, &pred);
			found |= jsonpath_predicate_bits(&pred, &h, bits);
		}
		else if (!jsonpath_plain_step(at, &h))
			break;				/* what follows is no plain path */
	}
	return found;
}

/*
 * The leaves predicate `pred` requires, as alternatives in masks[0..max):
 * an || matches only where one of its sides does (||s within it are
 * flattened), anything else as jsonpath_predicate_bits says.  Returns how
 * many masks; 0 when one side requires nothing we know or there are more
 * than max.
 */
static int
jsonpath_alternative_bits(JsonPathItem *pred, uint64 *masks, int max)
{
	JsonPathItem left,
				right;
	int			n;
	int			m;

	check_stack_depth();
	if (max < 1)
		return 0;
	if (pred->type != jpiOr)
		return jsonpath_predicate_bits(pred, NULL, masks) ? 1 : 0;
	jspGetLeftArg(pred, &left);
	jspGetRightArg(pred, &right);
	n = jsonpath_alternative_bits(&left, masks, max);
	if (n == 0)
		return 0;
	m = jsonpath_alternative_bits(&right, masks + (Size) n * GATEANN_JSONB_BLOOM_WORDS,
								  max - n);
	return m == 0 ? 0 : n + m;
}

int
gateann_filter_jsonpath_bits(JsonPath *jp, bool predicate, uint64 *masks)
{
	JsonPathItem root;

	jspInit(&root, jp);
	if (predicate)
		return jsonpath_alternative_bits(&root, masks, GATEANN_JSONPATH_ALTERNATIVES);
	return jsonpath_exists_bits(&root, masks) ? 1 : 0;
}

/* ---- jsonb_path_match's variables written into its path ------------------ */

static bool print_path_item(StringInfo buf, JsonPathItem *item, Jsonb *vars);

/* A JSON string as jsonpath writes one: in double quotes, escaped */
static void
print_quoted(StringInfo buf, const char *s, int len)
{
	char	   *z = pnstrdup(s, len);

	escape_json(buf, z);
	pfree(z);
}

/* A scalar of vars or of the path, as a jsonpath literal */
static bool
print_scalar(StringInfo buf, const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			appendStringInfoString(buf, "null");
			return true;
		case jbvBool:
			appendStringInfoString(buf, v->val.boolean ? "true" : "false");
			return true;
		case jbvNumeric:
			appendStringInfoString(buf, DatumGetCString(DirectFunctionCall1(numeric_out,
																			NumericGetDatum(v->val.numeric))));
			return true;
		case jbvString:
			print_quoted(buf, v->val.string.val, v->val.string.len);
			return true;
		default:
			return false;		/* an object or an array */
	}
}

/* A predicate's argument(s) between parentheses, op between two of them */
static bool
print_predicate(StringInfo buf, JsonPathItem *item, const char *op, Jsonb *vars)
{
	JsonPathItem left,
				right;

	jspGetLeftArg(item, &left);
	jspGetRightArg(item, &right);
	appendStringInfoChar(buf, '(');
	if (!print_path_item(buf, &left, vars))
		return false;
	appendStringInfo(buf, " %s ", op);
	if (!print_path_item(buf, &right, vars))
		return false;
	appendStringInfoChar(buf, ')');
	return true;
}

/* The argument of !, exists or a filter, after `opening`, then ")" */
static bool
print_argument(StringInfo buf, JsonPathItem *item, const char *opening, Jsonb *vars)
{
	JsonPathItem arg;

	jspGetArg(item, &arg);
	appendStringInfoString(buf, opening);
	if (!print_path_item(buf, &arg, vars))
		return false;
	appendStringInfoChar(buf, ')');
	return true;
}

/* The binary predicates, as jsonpath writes them */
static const struct
{
	JsonPathItemType type;
	const char *op;
}			predicate_operators[] =
{
	{jpiEqual, "=="},
	{jpiNotEqual, "!="},
	{jpiLess, "<"},
	{jpiLessOrEqual, "<="},
	{jpiGreater, ">"},
	{jpiGreaterOrEqual, ">="},
	{jpiAnd, "&&"},
	{jpiOr, "||"},
};

/* A literal of the path (null, boolean, number or string) as a JsonbValue */
static void
path_literal(JsonPathItem *item, JsonbValue *v)
{
	int32		len;

	switch (item->type)
	{
		case jpiBool:
			v->type = jbvBool;
			v->val.boolean = jspGetBool(item);
			break;
		case jpiNumeric:
			v->type = jbvNumeric;
			v->val.numeric = jspGetNumeric(item);
			break;
		case jpiString:
			v->type = jbvString;
			v->val.string.val = jspGetString(item, &len);
			v->val.string.len = len;
			break;
		default:
			v->type = jbvNull;
			break;
	}
}

/* One item of a path, without the steps after it */
static bool
print_one_item(StringInfo buf, JsonPathItem *item, Jsonb *vars)
{
	JsonbValue	v;
	char	   *s;
	int32		len;
	int			i;

	switch (item->type)
	{
		case jpiRoot:
			appendStringInfoChar(buf, '$');
			return true;
		case jpiCurrent:
			appendStringInfoChar(buf, '@');
			return true;
		case jpiKey:
			s = jspGetString(item, &len);
			appendStringInfoChar(buf, '.');
			print_quoted(buf, s, len);
			return true;
		case jpiAnyArray:
			appendStringInfoString(buf, "[*]");
			return true;
		case jpiVariable:
			{
				JsonbValue *found;

				s = jspGetString(item, &len);
				found = getKeyJsonValueFromContainer(&vars->root, s, len, &v);
				return found != NULL && !jspHasNext(item) && print_scalar(buf, found);
			}
		case jpiNull:
		case jpiBool:
		case jpiNumeric:
		case jpiString:
			path_literal(item, &v);
			return print_scalar(buf, &v);
		case jpiNot:
			return print_argument(buf, item, "!(", vars);
		case jpiExists:
			return print_argument(buf, item, "exists (", vars);
		case jpiFilter:
			return print_argument(buf, item, " ? (", vars);
		default:
			for (i = 0; i < lengthof(predicate_operators); i++)
				if (predicate_operators[i].type == item->type)
					return print_predicate(buf, item, predicate_operators[i].op, vars);
			return false;		/* methods, arithmetic, like_regex, ... */
	}
}

/* An item and the steps after it */
static bool
print_path_item(StringInfo buf, JsonPathItem *item, Jsonb *vars)
{
	JsonPathItem steps[2];
	JsonPathItem *at = item;
	int			k = 0;

	check_stack_depth();
	if (!print_one_item(buf, item, vars))
		return false;
	while (jspGetNext(at, &steps[k]))
	{
		at = &steps[k];
		k ^= 1;
		if (!print_one_item(buf, at, vars))
			return false;
	}
	return true;
}

JsonPath *
gateann_jsonpath_bind_vars(JsonPath *jp, Jsonb *vars)
{
	StringInfoData buf;
	JsonPathItem root;

	if (!JB_ROOT_IS_OBJECT(vars))
		return NULL;
	initStringInfo(&buf);
	if ((jp->header & JSONPATH_LAX) == 0)
		appendStringInfoString(&buf, "strict ");
	jspInit(&root, jp);
	if (!print_path_item(&buf, &root, vars))
		return NULL;
	return DatumGetJsonPathP(DirectFunctionCall1(jsonpath_in, CStringGetDatum(buf.data)));
}

/*
 * gateann_path_match_condition(path jsonpath, vars jsonb) RETURNS jsonpath:
 * what planner.c compares a jsonb filter column with (@@) for
 * jsonb_path_match(column, path, vars) when path or vars is known only when
 * the query runs (a parameter of a generic plan): path with vars written in
 * (gateann_jsonpath_bind_vars), or, for a path or vars it cannot write in
 * (or a NULL), the path `true`, which every value matches.  The call stays
 * the query's filter, so the condition only has to match at least the rows
 * it does.
 */
PG_FUNCTION_INFO_V1(gateann_path_match_condition);

Datum
gateann_path_match_condition(PG_FUNCTION_ARGS)
{
	JsonPath   *bound = NULL;

	if (!PG_ARGISNULL(0) && !PG_ARGISNULL(1))
		bound = gateann_jsonpath_bind_vars(PG_GETARG_JSONPATH_P(0), PG_GETARG_JSONB_P(1));
	if (bound == NULL)
		return DirectFunctionCall1(jsonpath_in, CStringGetDatum("true"));
	PG_RETURN_JSONPATH_P(bound);
}

/* ---- one key's equality, as applications write it ------------------------ */

/*
 * Is s, whole, the text jsonb writes for a number?  jsonb prints numbers
 * as numeric does: an optional minus, no leading zero, an optional
 * fraction, never an exponent.
 */
static bool
is_jsonb_number_text(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return false;
	if (*s == '.')
	{
		s++;
		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

/*
 * gateann_key_value_condition(key text, value jsonb) RETURNS jsonb: what
 * planner.c tests a jsonb filter column with (@>) for "column -> key =
 * value", the form Django writes for meta__k = v: the object {key: value}.
 * A row whose key equals value contains it; the equality stays the query's
 * filter (containment also takes a value's supersets).  STRICT: a NULL key
 * or value matches nothing, as the equality does.
 */
PG_FUNCTION_INFO_V1(gateann_key_value_condition);

Datum
gateann_key_value_condition(PG_FUNCTION_ARGS)
{
	text	   *key = PG_GETARG_TEXT_PP(0);
	Jsonb	   *value = PG_GETARG_JSONB_P(1);
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	print_quoted(&buf, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
	appendStringInfoString(&buf, ": ");
	(void) JsonbToCString(&buf, &value->root, VARSIZE(value));
	appendStringInfoChar(&buf, '}');
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
}

/* "$."key"": the path to key, as the conditions below write it */
static char *
key_field(text *key)
{
	StringInfoData field;

	initStringInfo(&field);
	appendStringInfoString(&field, "$.");
	print_quoted(&field, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
	return field.data;
}

/*
 * Append to buf the alternatives of a path that matches every value whose
 * ->> text is `value` (gateann_key_text_condition); false, with nothing
 * appended, when value starts as an array or an object does, whose text
 * the path cannot match (the caller writes exists(field) instead).
 */
static bool
append_text_alternatives(StringInfo buf, const char *field, const char *value)
{
	if (value[0] == '[' || value[0] == '{')
		return false;
	appendStringInfo(buf, "%s == ", field);
	escape_json(buf, value);
	if (is_jsonb_number_text(value) || strcmp(value, "true") == 0 || strcmp(value, "false") == 0)
		appendStringInfo(buf, " || %s == %s", field, value);
	return true;
}

/*
 * gateann_key_text_condition(key text, value text) RETURNS jsonpath: what
 * planner.c tests a jsonb filter column with (@@) for "column ->> key =
 * value", the form SQLAlchemy's .astext and Django's KeyTextTransform
 * write.  ->> gives a string's characters, and the text jsonb prints for a
 * number, a boolean, an array or an object, so the path is
 *   $."key" == "value"                      always,
 *   || $."key" == value                     when value is a number's text,
 *   || $."key" == true / false              when it is a boolean's,
 * and exists($."key") when value starts as an array or object does (the
 * store cannot tell those by their text).  The store rules nodes out
 * by the leaves of these alternatives (exists: not at all; the records
 * read are verified).  The equality stays the query's filter.  STRICT, as
 * gateann_key_value_condition.
 */
PG_FUNCTION_INFO_V1(gateann_key_text_condition);

Datum
gateann_key_text_condition(PG_FUNCTION_ARGS)
{
	char	   *field = key_field(PG_GETARG_TEXT_PP(0));
	char	   *value = text_to_cstring(PG_GETARG_TEXT_PP(1));
	StringInfoData buf;

	initStringInfo(&buf);
	if (!append_text_alternatives(&buf, field, value))
		appendStringInfo(&buf, "exists(%s)", field);
	return DirectFunctionCall1(jsonpath_in, CStringGetDatum(buf.data));
}

/*
 * gateann_key_any_condition(key text, values anyarray) RETURNS jsonpath:
 * for "column ->> key IN (...)" / "= ANY(values)" (text[]: each value's
 * alternatives as gateann_key_text_condition writes them) and "column ->
 * key IN (...)" (jsonb[]: $."key" == the scalar), joined by ||; NULL
 * elements match nothing and are left out, an empty list is the path
 * `false`; exists($."key") alone when a value is an array or object.  The
 * store checks up to GATEANN_JSONPATH_ALTERNATIVES alternatives; with more
 * it rules nothing out and the records read are verified.  STRICT.
 */
PG_FUNCTION_INFO_V1(gateann_key_any_condition);

Datum
gateann_key_any_condition(PG_FUNCTION_ARGS)
{
	char	   *field = key_field(PG_GETARG_TEXT_PP(0));
	ArrayType  *values = PG_GETARG_ARRAYTYPE_P(1);
	Oid			elemtype = ARR_ELEMTYPE(values);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	bool		any = false;
	StringInfoData buf;

	if (elemtype != TEXTOID && elemtype != JSONBOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("gateann_key_any_condition takes text[] or jsonb[], not %s",
						format_type_be(get_array_type(elemtype)))));
	deconstruct_array(values, elemtype, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	initStringInfo(&buf);
	for (i = 0; i < n; i++)
	{
		bool		scalar;

		if (nulls[i])
			continue;
		if (any)
			appendStringInfoString(&buf, " || ");
		if (elemtype == TEXTOID)
			scalar = append_text_alternatives(&buf, field, TextDatumGetCString(elems[i]));
		else
		{
			Jsonb	   *j = DatumGetJsonbP(elems[i]);

			scalar = JB_ROOT_IS_SCALAR(j);
			if (scalar)
			{
				appendStringInfo(&buf, "%s == ", field);
				(void) JsonbToCString(&buf, &j->root, VARSIZE(j));
			}
		}
		if (!scalar)
		{
			resetStringInfo(&buf);
			appendStringInfo(&buf, "exists(%s)", field);
			return DirectFunctionCall1(jsonpath_in, CStringGetDatum(buf.data));
		}
		any = true;
	}
	if (!any)
		appendStringInfoString(&buf, "false");
	return DirectFunctionCall1(jsonpath_in, CStringGetDatum(buf.data));
}
