/*
 * filter_scan.c — scan keys on filter columns: compiled against the
 * dictionaries of the filter store into per-code pass sets or Bloom masks
 * (the in-memory check a gate search makes before any read), and the exact
 * check of a read record's filter copies.
 */
#include "postgres.h"

#include "filter.h"

#include "access/stratnum.h"
#include "access/tupmacs.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonpath.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/typcache.h"

/* ---- scan keys ------------------------------------------------------------ */

/*
 * A scalar key's passing codes as at most this many runs lets the bulk
 * check (gateann_filter_store_select) test 16 nodes at a time.
 */
#define FILTER_MAX_RANGES	4

typedef struct FilterKey
{
	int			col;			/* filter column: attno - 2 */
	uint8		kind;			/* of the column */
	bool		isnull_key;		/* IS [NOT] NULL */
	bool		want_null;
	bool		search_array;	/* col = ANY(array) */
	int			strategy;
	FmgrInfo	fn;				/* the operator's function: exact checks */
	Oid			collation;
	Datum		arg;
	Datum	   *elems;			/* search_array: non-NULL elements */
	int			nelems;

	/* in-memory check */
	bool		store_all;		/* the store cannot tell: always passes */
	uint8		pass[32];		/* scalar: bitmap over the 256 codes */
	int			nranges;		/* pass as runs of codes (0: too many runs) */
	uint8		range_lo[FILTER_MAX_RANGES];
	uint8		range_len[FILTER_MAX_RANGES];	/* run is lo .. lo + len */
	uint64	   *masks;			/* bloom: nmasks of `words` words */
	int			nmasks;
	int			words;
	bool		any_mask;		/* && : any mask; @> : the one mask */
} FilterKey;

struct GateannFilter
{
	int			nkeys;
	FilterKey  *keys;
	bool		recheck;		/* some key is not evaluated here at all */
	bool		vector_null;	/* the vector IS NULL */
	bool		vector_not_null;	/* ... IS NOT NULL */
	const char *index_name;
	GateannSlotType types[GATEANN_MAX_FILTER_COLS];
};

static inline void
pass_set(FilterKey *k, int code)
{
	k->pass[code >> 3] |= (uint8) (1 << (code & 7));
}

/* FmgrInfo of `bound <strategy> arg` in the column's family, or NULL */
static FmgrInfo *
family_op(Relation index, int attno, Oid subtype, int strategy)
{
	Oid			opfamily = index->rd_opfamily[attno - 1];
	Oid			lefttype = index->rd_opcintype[attno - 1];
	Oid			opr = get_opfamily_member(opfamily, lefttype,
										  OidIsValid(subtype) ? subtype : lefttype,
										  strategy);
	FmgrInfo   *f;

	if (!OidIsValid(opr))
		return NULL;
	f = palloc(sizeof(FmgrInfo));
	fmgr_info(get_opcode(opr), f);
	return f;
}

/*
 * `a op b` on two values, as a WHERE clause takes it: NULL (a jsonpath
 * predicate's unknown, `strict $.a == 1` on an array) is not true.
 */
static bool
call_bool(FmgrInfo *f, Oid collation, Datum a, Datum b)
{
	LOCAL_FCINFO(fcinfo, 2);
	Datum		result;

	InitFunctionCallInfoData(*fcinfo, f, 2, collation, NULL, NULL);
	fcinfo->args[0].value = a;
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = b;
	fcinfo->args[1].isnull = false;
	result = FunctionCallInvoke(fcinfo);
	return !fcinfo->isnull && DatumGetBool(result);
}

/* Could some value of bucket i (bounds b, nb of them) satisfy `v op arg`? */
static bool
bucket_may_match(const Datum *b, int nb, int i, int strategy, Datum arg, Oid collation,
				 FmgrInfo *lt, FmgrInfo *ge, FmgrInfo *gt)
{
	bool		has_lower = i > 0;	/* values > b[i-1] */
	bool		has_upper = i < nb; /* values <= b[i] */

	switch (strategy)
	{
		case STRAT_LT:
		case STRAT_LE:
			return !has_lower || call_bool(lt, collation, b[i - 1], arg);
		case STRAT_EQ:
			return (!has_lower || call_bool(lt, collation, b[i - 1], arg)) &&
				(!has_upper || call_bool(ge, collation, b[i], arg));
		case STRAT_GE:
			return !has_upper || call_bool(ge, collation, b[i], arg);
		case STRAT_GT:
			return !has_upper || call_bool(gt, collation, b[i], arg);
	}
	return true;
}

static void
compile_scalar_store(FilterKey *k, Relation index, const GateannFilterColumn *col,
					 const char *dict, Oid subtype)
{
	Datum	   *bounds = gateann_filter_dictionary_values(col, dict);
	Datum	   *args = k->search_array ? k->elems : &k->arg;
	int			nargs = k->search_array ? k->nelems : 1;
	int			i,
				a;

	memset(k->pass, 0, sizeof(k->pass));
	pass_set(k, GATEANN_CODE_UNKNOWN);
	if (col->dict_exact)
	{
		/* one code per value: evaluate the operator itself, exactly */
		for (i = 0; i < col->nbounds; i++)
			for (a = 0; a < nargs; a++)
				if (call_bool(&k->fn, k->collation, bounds[i], args[a]))
				{
					pass_set(k, i);
					break;
				}
	}
	else
	{
		FmgrInfo   *lt = family_op(index, k->col + 2, subtype, STRAT_LT);
		FmgrInfo   *ge = family_op(index, k->col + 2, subtype, STRAT_GE);
		FmgrInfo   *gt = family_op(index, k->col + 2, subtype, STRAT_GT);

		if (lt == NULL || ge == NULL || gt == NULL || k->strategy > STRAT_GT)
		{
			k->store_all = true;
			return;
		}
		for (i = 0; i <= col->nbounds; i++)
			for (a = 0; a < nargs; a++)
				if (bucket_may_match(bounds, col->nbounds, i, k->strategy, args[a],
									 k->collation, lt, ge, gt))
				{
					pass_set(k, i);
					break;
				}
	}
}

static void
compile_bloom_store(FilterKey *k, Relation index, const GateannFilterColumn *col,
					bool *never)
{
	GateannCoderColumn cc;
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				i;

	if (k->search_array || (k->strategy != STRAT_OVERLAP && k->strategy != STRAT_CONTAINS))
	{
		k->store_all = true;	/* <@ and others: verified on the record only */
		return;
	}
	gateann_filter_coder_column_init(&cc, col, index->rd_indcollation[k->col + 1], NULL);
	arr = DatumGetArrayTypeP(k->arg);
	if (ARR_ELEMTYPE(arr) != cc.elemtype)
	{
		k->store_all = true;
		return;
	}
	deconstruct_array(arr, cc.elemtype, cc.elemlen, cc.elembyval, cc.elemalign,
					  &elems, &nulls, &n);
	k->masks = palloc(sizeof(uint64) * Max(n, 1));
	k->nmasks = 0;
	k->words = 1;
	if (k->strategy == STRAT_CONTAINS)
	{
		uint64		mask = 0;

		for (i = 0; i < n; i++)
			if (!nulls[i])
				mask |= gateann_filter_bloom_of_element(&cc, elems[i]);
		k->masks[k->nmasks++] = mask;
		k->any_mask = false;
	}
	else
	{
		for (i = 0; i < n; i++)
			if (!nulls[i])
				k->masks[k->nmasks++] = gateann_filter_bloom_of_element(&cc, elems[i]);
		k->any_mask = true;
		if (k->nmasks == 0)
			*never = true;		/* nothing overlaps an empty set */
	}
}

/*
 * A key on a jsonb column: = needs every bit of its argument (equal values
 * have the same leaves and keys), @> every leaf bit of it, ? the key's
 * bits, ?& every key's, ?| some key's, @@ and @? the bits of the equalities
 * the jsonpath requires (filter_jsonb.c).
 */
static void
compile_jsonb_store(FilterKey *k, bool *never)
{
	const int	words = GATEANN_JSONB_BLOOM_WORDS;

	k->words = words;
	k->nmasks = 0;
	k->any_mask = false;
	if (k->search_array)
	{
		k->store_all = true;
		return;
	}
	switch (k->strategy)
	{
		case STRAT_EQ:
		case STRAT_CONTAINS:
			k->masks = palloc0(sizeof(uint64) * words);
			gateann_filter_jsonb_bits(DatumGetJsonbP(k->arg), k->strategy == STRAT_EQ, k->masks);
			k->nmasks = 1;
			break;
		case STRAT_EXISTS:
			{
				text	   *key = DatumGetTextPP(k->arg);

				k->masks = palloc0(sizeof(uint64) * words);
				gateann_filter_jsonb_bloom_add(k->masks,
											   gateann_filter_jsonb_key_hash(VARDATA_ANY(key),
																			 VARSIZE_ANY_EXHDR(key)));
				k->nmasks = 1;
				break;
			}
		case STRAT_EXISTS_ANY:
		case STRAT_EXISTS_ALL:
			{
				bool		any = k->strategy == STRAT_EXISTS_ANY;
				Datum	   *elems;
				bool	   *nulls;
				int			n,
							i;

				deconstruct_array(DatumGetArrayTypeP(k->arg), TEXTOID, -1, false,
								  TYPALIGN_INT, &elems, &nulls, &n);
				k->masks = palloc0(sizeof(uint64) * words * Max(n, 1));
				k->nmasks = any ? 0 : 1;	/* ?& : one mask of every key */
				for (i = 0; i < n; i++)
				{
					text	   *key;
					uint64	   *mask = k->masks;

					if (nulls[i])
						continue;	/* the operators skip NULL keys */
					if (any)
						mask += (Size) words * k->nmasks++;	/* ?| : a mask per key */
					key = DatumGetTextPP(elems[i]);
					gateann_filter_jsonb_bloom_add(mask,
												   gateann_filter_jsonb_key_hash(VARDATA_ANY(key),
																				 VARSIZE_ANY_EXHDR(key)));
				}
				if (any && k->nmasks == 0)
					*never = true;	/* no key to have */
				k->any_mask = any;
				break;
			}
		case STRAT_PATH_MATCH:
		case STRAT_PATH_EXISTS:
			k->masks = palloc0(sizeof(uint64) * words * GATEANN_JSONPATH_ALTERNATIVES);
			k->nmasks = gateann_filter_jsonpath_bits(DatumGetJsonPathP(k->arg),
													 k->strategy == STRAT_PATH_MATCH, k->masks);
			k->any_mask = k->nmasks > 1;	/* ||: one side's leaves suffice */
			if (k->nmasks == 0)
				k->store_all = true;	/* it requires no equality we know */
			break;
		default:
			k->store_all = true;	/* verified on the record only */
			break;
	}
}

/* The passing codes of a scalar key as runs, if there are few */
static void
compile_code_ranges(FilterKey *k)
{
	int			code = 0;

	k->nranges = 0;
	while (code < 256)
	{
		int			start;

		if (!(k->pass[code >> 3] & (1 << (code & 7))))
		{
			code++;
			continue;
		}
		start = code;
		while (code < 256 && (k->pass[code >> 3] & (1 << (code & 7))))
			code++;
		if (k->nranges == FILTER_MAX_RANGES)
		{
			k->nranges = 0;
			return;
		}
		k->range_lo[k->nranges] = (uint8) start;
		k->range_len[k->nranges] = (uint8) (code - 1 - start);
		k->nranges++;
	}
}

GateannFilter *
gateann_filter_compile(Relation index, const GateannMetaPageData *meta,
					   ScanKey keys, int nkeys, const char *dict, bool *never)
{
	GateannFilter *f = palloc0(sizeof(GateannFilter));
	int			i;

	*never = false;
	f->keys = palloc0(sizeof(FilterKey) * Max(nkeys, 1));
	f->index_name = pstrdup(RelationGetRelationName(index));
	gateann_filter_slot_types(meta, f->types);
	for (i = 0; i < nkeys; i++)
	{
		ScanKey		sk = &keys[i];
		FilterKey  *k = &f->keys[f->nkeys];
		const GateannFilterColumn *col;

		if (sk->sk_attno == 1)
		{
			/*
			 * Rows with a NULL vector are tail records (gateann.h): the
			 * scan returns them or not (PostgreSQL sets SK_ISNULL on both
			 * keys, so test them first).  The vector column has no other
			 * search operator: the executor decides anything else.
			 */
			if (sk->sk_flags & SK_SEARCHNOTNULL)
				f->vector_not_null = true;
			else if (sk->sk_flags & SK_SEARCHNULL)
				f->vector_null = true;
			else if (sk->sk_flags & SK_ISNULL)
				*never = true;
			else
				f->recheck = true;
			continue;
		}
		if (sk->sk_attno < 2 || sk->sk_attno - 2 >= meta->nfilter)
		{
			f->recheck = true;
			continue;
		}
		k->col = sk->sk_attno - 2;
		col = &meta->filter[k->col];
		k->kind = col->kind;

		if (sk->sk_flags & (SK_SEARCHNULL | SK_SEARCHNOTNULL))
		{
			int			code;

			k->isnull_key = true;
			k->want_null = (sk->sk_flags & SK_SEARCHNULL) != 0;
			if (col->kind != GATEANN_FILTER_KIND_SCALAR)
				k->store_all = true;
			else
				for (code = 0; code < 256; code++)
					if ((code == GATEANN_CODE_NULL) == k->want_null)
						pass_set(k, code);
			f->nkeys++;
			continue;
		}
		if (sk->sk_flags & SK_ISNULL)
		{
			*never = true;		/* col op NULL is never true */
			continue;
		}
		if (sk->sk_strategy < STRAT_LT || sk->sk_strategy > STRAT_PATH_EXISTS)
		{
			f->recheck = true;	/* not ours: the executor decides */
			continue;
		}

		k->strategy = sk->sk_strategy;
		fmgr_info_copy(&k->fn, &sk->sk_func, CurrentMemoryContext);
		k->collation = sk->sk_collation;
		k->arg = sk->sk_argument;
		if (sk->sk_flags & SK_SEARCHARRAY)
		{
			ArrayType  *arr = DatumGetArrayTypeP(sk->sk_argument);
			int16		elmlen;
			bool		elmbyval;
			char		elmalign;
			bool	   *nulls;
			Datum	   *elems;
			int			n,
						j;

			get_typlenbyvalalign(ARR_ELEMTYPE(arr), &elmlen, &elmbyval, &elmalign);
			deconstruct_array(arr, ARR_ELEMTYPE(arr), elmlen, elmbyval, elmalign,
							  &elems, &nulls, &n);
			k->search_array = true;
			k->elems = palloc(sizeof(Datum) * Max(n, 1));
			for (j = 0; j < n; j++)
				if (!nulls[j])
					k->elems[k->nelems++] = elems[j];
			if (k->nelems == 0)
			{
				*never = true;	/* = ANY of no (non-NULL) value */
				continue;
			}
		}

		if (col->kind == GATEANN_FILTER_KIND_SCALAR)
		{
			compile_scalar_store(k, index, col, dict, sk->sk_subtype);
			compile_code_ranges(k);
		}
		else if (col->kind == GATEANN_FILTER_KIND_JSONB)
			compile_jsonb_store(k, never);
		else
			compile_bloom_store(k, index, col, never);
		f->nkeys++;
	}
	return f;
}

bool
gateann_filter_active(const GateannFilter *filter)
{
	return filter->nkeys > 0;
}

bool
gateann_filter_needs_recheck(const GateannFilter *filter)
{
	return filter->recheck;
}

/* In-memory check of one key on node id (store_all keys are not asked) */
static inline bool
key_store_pass(const FilterKey *k, const uint8 *const *cols, uint32 id)
{
	if (k->kind == GATEANN_FILTER_KIND_SCALAR)
	{
		uint8		code = cols[k->col][id];

		return (k->pass[code >> 3] & (1 << (code & 7))) != 0;
	}
	else if (k->words == 1)
	{
		uint64		bloom;
		int			m;

		memcpy(&bloom, cols[k->col] + (Size) id * sizeof(uint64), sizeof(uint64));
		if (!k->any_mask)
			return (bloom & k->masks[0]) == k->masks[0];
		for (m = 0; m < k->nmasks; m++)
			if ((bloom & k->masks[m]) == k->masks[m])
				return true;
		return false;
	}
	else
	{
		uint64		bloom[GATEANN_JSONB_BLOOM_WORDS];
		int			m,
					w;

		memcpy(bloom, cols[k->col] + (Size) id * sizeof(bloom), sizeof(bloom));
		for (m = 0; m < k->nmasks; m++)
		{
			const uint64 *mask = k->masks + (Size) m * GATEANN_JSONB_BLOOM_WORDS;

			for (w = 0; w < GATEANN_JSONB_BLOOM_WORDS; w++)
				if ((bloom[w] & mask[w]) != mask[w])
					break;
			if (w == GATEANN_JSONB_BLOOM_WORDS)
				return true;	/* any_mask: one suffices; else there is one */
		}
		return false;
	}
}

GateannVectorNulls
gateann_filter_vector_nulls(const GateannFilter *filter)
{
	if (filter->vector_null && filter->vector_not_null)
		return GATEANN_VECTOR_NONE;
	if (filter->vector_null)
		return GATEANN_VECTOR_NULL_ONLY;
	if (filter->vector_not_null)
		return GATEANN_VECTOR_NOT_NULL;
	return GATEANN_VECTOR_ANY;
}

bool
gateann_filter_matches_nothing(const GateannFilter *filter, const uint8 *const *cols,
							   uint32 capacity)
{
	int			i;

	for (i = 0; i < filter->nkeys; i++)
	{
		const FilterKey *k = &filter->keys[i];
		int			code;

		if (k->store_all || k->kind != GATEANN_FILTER_KIND_SCALAR)
			continue;
		for (code = 0; code < 256; code++)
			if (code != GATEANN_CODE_UNKNOWN && (k->pass[code >> 3] & (1 << (code & 7))))
				break;
		if (code < 256)
			continue;			/* a value the dictionary knows passes */
		/* only values the dictionary does not know might: does any node have one? */
		if (!(k->pass[GATEANN_CODE_UNKNOWN >> 3] & (1 << (GATEANN_CODE_UNKNOWN & 7))) ||
			memchr(cols[k->col], GATEANN_CODE_UNKNOWN, capacity) == NULL)
			return true;
	}
	return false;
}

bool
gateann_filter_store_pass(const GateannFilter *filter, const uint8 *const *cols, uint32 id)
{
	int			i;

	for (i = 0; i < filter->nkeys; i++)
	{
		const FilterKey *k = &filter->keys[i];

		if (!k->store_all && !key_store_pass(k, cols, id))
			return false;
	}
	return true;
}

#if defined(__GNUC__) || defined(__clang__)
/* 16 codes at once with the compiler's generic vectors (SSE2, NEON, ...) */
typedef uint8 CodeVector __attribute__((vector_size(16)));
#define FILTER_HAVE_CODE_VECTOR 1
#endif

/*
 * Node ids lo..hi-1 whose code of scalar key k passes, into out; returns
 * their number.  Most blocks of 16 nodes have no passing code when the key
 * is selective: those are ruled out by a few vector compares.
 */
static int
select_scalar_dense(const FilterKey *k, const uint8 *codes, uint32 lo, uint32 hi,
					uint32 *out)
{
	int			n = 0;
	uint32		id = lo;

#ifdef FILTER_HAVE_CODE_VECTOR
	if (k->nranges > 0)
	{
		CodeVector	lo_v[FILTER_MAX_RANGES];
		CodeVector	len_v[FILTER_MAX_RANGES];
		int			r;

		/* unused slots repeat the first run: a fixed, unrolled loop */
		for (r = 0; r < FILTER_MAX_RANGES; r++)
		{
			int			from = r < k->nranges ? r : 0;
			int			b;

			for (b = 0; b < 16; b++)
			{
				lo_v[r][b] = k->range_lo[from];
				len_v[r][b] = k->range_len[from];
			}
		}
		for (; id + 16 <= hi; id += 16)
		{
			CodeVector	v;
			CodeVector	hit = {0};
			uint64		words[2];

			memcpy(&v, codes + id, sizeof(v));
			/* lo <= c <= lo + len  as  (c - lo) <= len, unsigned */
			for (r = 0; r < FILTER_MAX_RANGES; r++)
				hit |= (CodeVector) (v - lo_v[r] <= len_v[r]);
			memcpy(words, &hit, sizeof(words));
			/* each passing node is a 0xFF byte: visit just those */
			for (r = 0; r < 2; r++)
			{
				uint64		w = words[r];

				while (w != 0)
				{
					int			shift = pg_rightmost_one_pos64(w) & ~7;

#ifdef WORDS_BIGENDIAN
					out[n++] = id + 8 * r + 7 - shift / 8;
#else
					out[n++] = id + 8 * r + shift / 8;
#endif
					w &= ~(UINT64CONST(0xFF) << shift);
				}
			}
		}
	}
#endif
	for (; id < hi; id++)
	{
		uint8		code = codes[id];

		out[n] = id;
		n += (k->pass[code >> 3] >> (code & 7)) & 1;
	}
	return n;
}

/*
 * A column at a time: the first key the store can check runs over the
 * dense range (a byte per node for scalar columns), each later key only
 * over the survivors.
 */
int
gateann_filter_store_select(const GateannFilter *filter, const uint8 *const *cols,
							uint32 lo, uint32 hi, uint32 *out)
{
	int			n = 0;
	int			i;
	bool		dense = true;

	for (i = 0; i < filter->nkeys; i++)
	{
		const FilterKey *k = &filter->keys[i];
		int			kept = 0;
		int			j;

		if (k->store_all)
			continue;
		if (dense && k->kind == GATEANN_FILTER_KIND_SCALAR)
			n = select_scalar_dense(k, cols[k->col], lo, hi, out);
		else if (dense)
		{
			uint32		id;

			for (id = lo; id < hi; id++)
			{
				out[n] = id;
				n += key_store_pass(k, cols, id) ? 1 : 0;
			}
		}
		else
		{
			for (j = 0; j < n; j++)
			{
				out[kept] = out[j];
				kept += key_store_pass(k, cols, out[j]) ? 1 : 0;
			}
			n = kept;
		}
		dense = false;
	}
	if (dense)
	{
		uint32		id;

		for (id = lo; id < hi; id++)
			out[n++] = id;
	}
	return n;
}

GateannFilterResult
gateann_filter_record_check(const GateannFilter *filter, const GateannMetaPageData *meta,
							const char *record)
{
	const uint8 *area = (const uint8 *) record + meta->filter_offset;
	GateannFilterResult result = GATEANN_FILTER_PASS;
	int			i;

	for (i = 0; i < filter->nkeys; i++)
	{
		const FilterKey *k = &filter->keys[i];
		Datum		value;
		GateannSlot slot = gateann_filter_read(meta, area, k->col, filter->types, &value);
		bool		notnull = slot != GATEANN_SLOT_NULL;
		bool		overflow = slot == GATEANN_SLOT_OVERFLOW;
		bool		ok;

		if (slot == GATEANN_SLOT_DAMAGED)
			gateann_filter_report_damage(filter->index_name, k->col);
		if (k->isnull_key)
		{
			if (notnull == k->want_null)
				return GATEANN_FILTER_FAIL;
			continue;
		}
		if (!notnull)
			return GATEANN_FILTER_FAIL;	/* the operators are strict */
		if (overflow)
		{
			result = GATEANN_FILTER_UNKNOWN;
			continue;
		}
		if (k->search_array)
		{
			int			j;

			ok = false;
			for (j = 0; j < k->nelems && !ok; j++)
				ok = call_bool((FmgrInfo *) &k->fn, k->collation, value, k->elems[j]);
		}
		else
			ok = call_bool((FmgrInfo *) &k->fn, k->collation, value, k->arg);
		if (!ok)
			return GATEANN_FILTER_FAIL;
	}
	return result;
}
