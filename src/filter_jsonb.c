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
 */
#include "postgres.h"

#include "filter.h"

#include "common/hashfn.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"

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
