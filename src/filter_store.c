/*
 * filter_store.c — the in-memory filter store: per-column dictionaries
 * (scalar columns: their distinct values, or equi-depth bucket bounds when
 * there are more than one-byte codes can name) built at CREATE INDEX or by
 * retraining, and
 * the coder that turns a node's filter copies into its one-byte codes or
 * 64-bit Bloom masks (array columns).  filter_scan.c compiles scan keys
 * against the same dictionaries.
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
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/typcache.h"

/* ---- dictionaries ---------------------------------------------------------- */

int
gateann_filter_store_width(const GateannFilterColumn *col)
{
	if (col->kind == GATEANN_FILTER_KIND_SCALAR)
		return 1;
	return (int) sizeof(uint64) * gateann_filter_bloom_words(col->kind);
}

/*
 * Scalar columns get a dictionary; arrays of a hashable element and jsonb,
 * Bloom bits.
 */
uint8
gateann_filter_column_kind(Oid typid)
{
	Oid			elem = get_element_type(typid);

	if (typid == JSONBOID)
		return GATEANN_FILTER_KIND_JSONB;
	if (OidIsValid(elem) &&
		OidIsValid(lookup_type_cache(elem, TYPECACHE_HASH_PROC)->hash_proc))
		return GATEANN_FILTER_KIND_BLOOM;
	return GATEANN_FILTER_KIND_SCALAR;
}

/* Stride of one dictionary entry (see serialise_value) */
static Size
value_bytes(const GateannFilterColumn *col, Datum value)
{
	if (col->typlen > 0)
		return MAXALIGN(col->typlen);
	return MAXALIGN(sizeof(uint32) + VARSIZE(DatumGetPointer(value)));
}

static void
serialise_value(const GateannFilterColumn *col, Datum value, char *dst)
{
	if (col->typlen > 0)
	{
		if (col->typbyval)
			store_att_byval(dst, value, col->typlen);
		else
			memcpy(dst, DatumGetPointer(value), col->typlen);
	}
	else
	{
		uint32		len = VARSIZE(DatumGetPointer(value));

		memcpy(dst, &len, sizeof(uint32));
		memcpy(dst + sizeof(uint32), DatumGetPointer(value), len);
	}
}

/* Datums of a column's dictionary (pointing into dict for by-reference types) */
Datum *
gateann_filter_dictionary_values(const GateannFilterColumn *col, const char *dict)
{
	Datum	   *values = palloc(sizeof(Datum) * Max(col->nbounds, 1));
	const char *p = dict + col->dict_offset;
	int			i;

	for (i = 0; i < col->nbounds; i++)
	{
		if (col->typlen > 0)
		{
			values[i] = col->typbyval ? fetch_att(p, true, col->typlen) : PointerGetDatum(p);
			p += MAXALIGN(col->typlen);
		}
		else
		{
			uint32		len;

			memcpy(&len, p, sizeof(uint32));
			values[i] = PointerGetDatum(p + sizeof(uint32));
			p += MAXALIGN(sizeof(uint32) + len);
		}
	}
	return values;
}

/*
 * NULL when filter column c's dictionary in dict (the index's dictionary
 * pages, read as they are) is well formed, else what is wrong with it.
 * Every later reader trusts it: the lengths of varlena entries (a text
 * comparison copies that many bytes), their count, and their strictly
 * ascending order (the coder's binary search and the scan's bucket tests).
 * A damaged metapage that points a column at another column's entries
 * fails here too.  The metapage check has placed the column's bytes within
 * meta->dict_bytes.
 */
char *
gateann_filter_dictionary_problem(Relation index, const GateannMetaPageData *meta,
								  int c, const char *dict)
{
	const GateannFilterColumn *col = &meta->filter[c];
	const char *p = dict + col->dict_offset;
	const char *end = p + col->dict_bytes;
	TypeCacheEntry *tce = NULL;
	Datum		prev = (Datum) 0;
	int			i;

	if (col->kind == GATEANN_FILTER_KIND_SCALAR)
		tce = lookup_type_cache(col->typid, TYPECACHE_CMP_PROC_FINFO);
	if (tce == NULL || !OidIsValid(tce->cmp_proc))
	{
		/* no order: the build gave the column no dictionary */
		if (col->nbounds != 0 || col->dict_bytes != 0)
			return psprintf("filter column %d has a dictionary its type cannot have", c + 2);
		return NULL;
	}
	if (col->nbounds > GATEANN_FILTER_BUCKETS)
		return psprintf("the dictionary of filter column %d has %u entries", c + 2, col->nbounds);

	for (i = 0; i < col->nbounds; i++)
	{
		Datum		value;
		Size		len;

		if (col->typlen > 0)
		{
			len = MAXALIGN(col->typlen);
			if ((Size) (end - p) < len)
				break;
			value = col->typbyval ? fetch_att(p, true, col->typlen) : PointerGetDatum(p);
		}
		else
		{
			uint32		vlen;

			if ((Size) (end - p) < sizeof(uint32) + VARHDRSZ)
				break;
			memcpy(&vlen, p, sizeof(uint32));
			if (vlen < VARHDRSZ || vlen > (Size) (end - p) - sizeof(uint32) ||
				!VARATT_IS_4B_U(p + sizeof(uint32)) || VARSIZE(p + sizeof(uint32)) != vlen)
				return psprintf("entry %d of the dictionary of filter column %d is damaged", i, c + 2);
			len = MAXALIGN(sizeof(uint32) + vlen);
			if (len > (Size) (end - p))
				break;
			value = PointerGetDatum(p + sizeof(uint32));
		}
		if (i > 0 &&
			DatumGetInt32(FunctionCall2Coll(&tce->cmp_proc_finfo,
											index->rd_indcollation[c + 1],
											prev, value)) >= 0)
			return psprintf("the dictionary of filter column %d is out of order at entry %d",
							c + 2, i);
		prev = value;
		p += len;
	}
	if (i < col->nbounds || p != end)
		return psprintf("the dictionary of filter column %d does not hold %u entries in %u bytes",
						c + 2, col->nbounds, col->dict_bytes);
	return NULL;
}

/* Value of column col of node id in a build arena (copied to aligned memory) */
static bool
arena_value(const GateannFilterLayout *layout, const GateannFilterArena *arena,
			uint32 id, int col, Datum *value)
{
	const char *p = arena->data + arena->node_offset[id];
	int			c;

	for (c = 0;; c++)
	{
		const GateannFilterColumn *fc = &layout->cols[c];
		uint8		flags = (uint8) *p++;
		uint32		len = 0;

		if (!(flags & (GATEANN_FILTER_NULL | GATEANN_FILTER_OVERFLOW)))
		{
			if (fc->typlen > 0)
				len = fc->typlen;
			else
			{
				memcpy(&len, p, sizeof(uint32));
				p += sizeof(uint32);
			}
		}
		if (c == col)
		{
			char	   *copy;

			if (flags & (GATEANN_FILTER_NULL | GATEANN_FILTER_OVERFLOW))
				return false;
			copy = palloc(MAXALIGN(len));
			memcpy(copy, p, len);
			*value = (fc->typlen > 0 && fc->typbyval) ?
				fetch_att(copy, true, fc->typlen) : PointerGetDatum(copy);
			return true;
		}
		p += len;
	}
}

typedef struct SortContext
{
	FmgrInfo   *cmp;
	Oid			collation;
} SortContext;

static int
datum_cmp(const void *a, const void *b, void *arg)
{
	SortContext *sc = (SortContext *) arg;

	return DatumGetInt32(FunctionCall2Coll(sc->cmp, sc->collation,
										   *(const Datum *) a, *(const Datum *) b));
}

Size
gateann_filter_build_dictionaries(Relation index, GateannMetaPageData *meta,
								  const GateannFilterLayout *layout,
								  const GateannFilterArena *arena,
								  uint32 nnodes, char **out)
{
	StringInfoData buf;
	int			c;

	initStringInfo(&buf);
	for (c = 0; c < meta->nfilter; c++)
	{
		GateannFilterColumn *col = &meta->filter[c];
		TypeCacheEntry *tce;
		Datum	   *values;
		Datum	   *chosen;
		int			nvalues = 0;
		int			ndistinct = 0;
		int			nchosen = 0;
		uint32		id;
		int			i;
		SortContext sc;
		MemoryContext tmpcxt,
					oldcxt;

		col->kind = gateann_filter_column_kind(col->typid);
		col->dict_offset = buf.len;
		col->nbounds = 0;
		col->dict_exact = false;
		col->dict_bytes = 0;
		if (col->kind != GATEANN_FILTER_KIND_SCALAR)
			continue;
		tce = lookup_type_cache(col->typid, TYPECACHE_CMP_PROC_FINFO);
		if (!OidIsValid(tce->cmp_proc))
			continue;			/* no order: every node "unknown" */

		tmpcxt = AllocSetContextCreate(CurrentMemoryContext, "gateann dictionary",
									   ALLOCSET_DEFAULT_SIZES);
		oldcxt = MemoryContextSwitchTo(tmpcxt);
		values = palloc_extended(sizeof(Datum) * Max(nnodes, 1), MCXT_ALLOC_HUGE);
		for (id = 0; id < nnodes; id++)
		{
			if (arena_value(layout, arena, id, c, &values[nvalues]))
				nvalues++;
			if ((id & 8191) == 0)
				CHECK_FOR_INTERRUPTS();
		}
		sc.cmp = &tce->cmp_proc_finfo;
		sc.collation = index->rd_indcollation[c + 1];
		qsort_arg(values, nvalues, sizeof(Datum), datum_cmp, &sc);

		/* distinct values, while they fit a dictionary */
		chosen = palloc(sizeof(Datum) * GATEANN_FILTER_BUCKETS);
		for (i = 0; i < nvalues; i++)
		{
			if (i > 0 && datum_cmp(&values[i - 1], &values[i], &sc) == 0)
				continue;
			if (ndistinct < GATEANN_FILTER_BUCKETS)
				chosen[ndistinct] = values[i];
			ndistinct++;
		}
		if (ndistinct <= GATEANN_FILTER_BUCKETS)
		{
			nchosen = ndistinct;
			col->dict_exact = true;
		}
		else
		{
			/*
			 * Equi-depth: upper bounds of GATEANN_FILTER_BUCKETS - 1 buckets
			 * (the last bucket is open-ended), duplicates merged.
			 */
			for (i = 0; i < GATEANN_FILTER_BUCKETS - 1; i++)
			{
				Datum		b = values[(Size) (i + 1) * nvalues / GATEANN_FILTER_BUCKETS - 1];

				if (nchosen > 0 && datum_cmp(&chosen[nchosen - 1], &b, &sc) == 0)
					continue;
				chosen[nchosen++] = b;
			}
		}
		MemoryContextSwitchTo(oldcxt);

		for (i = 0; i < nchosen; i++)
		{
			Size		len = value_bytes(col, chosen[i]);

			enlargeStringInfo(&buf, len);
			memset(buf.data + buf.len, 0, len);
			serialise_value(col, chosen[i], buf.data + buf.len);
			buf.len += len;
		}
		col->nbounds = nchosen;
		col->dict_bytes = buf.len - col->dict_offset;
		MemoryContextDelete(tmpcxt);
	}
	meta->dict_bytes = buf.len;
	*out = buf.data;
	return buf.len;
}

Size
gateann_filter_dictionaries_max_bytes(const GateannMetaPageData *meta)
{
	Size		total = 0;
	int			c;

	for (c = 0; c < meta->nfilter; c++)
	{
		const GateannFilterColumn *col = &meta->filter[c];

		if (gateann_filter_column_kind(col->typid) != GATEANN_FILTER_KIND_SCALAR)
			continue;
		/* an entry is at most what the column's record slot holds (value_bytes) */
		total += (Size) GATEANN_FILTER_BUCKETS *
			(col->typlen > 0 ? MAXALIGN(col->typlen) : MAXALIGN(sizeof(uint32) + col->width));
	}
	return total;
}

Size
gateann_filter_dictionaries_from_records(Relation index, GateannMetaPageData *meta,
										 const uint8 *areas, uint32 n, char **out)
{
	GateannFilterLayout *layout = gateann_filter_layout_create(index);
	GateannFilterArena arena;
	GateannSlotType types[GATEANN_MAX_FILTER_COLS];
	Datum		values[GATEANN_MAX_FILTER_COLS];
	bool		isnull[GATEANN_MAX_FILTER_COLS];
	uint32		i;
	int			c;

	gateann_filter_slot_types(meta, types);
	gateann_filter_arena_init(&arena, layout);
	for (i = 0; i < n; i++)
	{
		const uint8 *area = areas + (Size) i * meta->filter_size;

		for (c = 0; c < meta->nfilter; c++)
		{
			GateannSlot slot = gateann_filter_read(meta, area, c, types, &values[c]);

			if (slot == GATEANN_SLOT_DAMAGED)
				gateann_filter_report_damage(RelationGetRelationName(index), c);
			/* a value too long for its slot stays out: it is coded "unknown" */
			isnull[c] = slot != GATEANN_SLOT_VALUE;
		}
		gateann_filter_arena_add(&arena, layout, values, isnull);
	}
	return gateann_filter_build_dictionaries(index, meta, layout, &arena, n, out);
}

/* ---- coding nodes --------------------------------------------------------- */


struct GateannFilterCoder
{
	const GateannMetaPageData *meta;
	const char *index_name;
	GateannSlotType types[GATEANN_MAX_FILTER_COLS];
	GateannCoderColumn cols[GATEANN_MAX_FILTER_COLS];
};

void
gateann_filter_coder_column_init(GateannCoderColumn *cc, const GateannFilterColumn *col, Oid collation,
				  const char *dict)
{
	cc->col = col;
	cc->width = gateann_filter_store_width(col);
	cc->collation = collation;
	if (col->kind == GATEANN_FILTER_KIND_SCALAR)
	{
		TypeCacheEntry *tce = lookup_type_cache(col->typid, TYPECACHE_CMP_PROC_FINFO);

		cc->cmp = OidIsValid(tce->cmp_proc) ? &tce->cmp_proc_finfo : NULL;
		cc->dict = gateann_filter_dictionary_values(col, dict);
	}
	else if (col->kind == GATEANN_FILTER_KIND_BLOOM)
	{
		TypeCacheEntry *tce;

		cc->elemtype = get_element_type(col->typid);
		get_typlenbyvalalign(cc->elemtype, &cc->elemlen, &cc->elembyval, &cc->elemalign);
		tce = lookup_type_cache(cc->elemtype, TYPECACHE_HASH_PROC_FINFO);
		cc->hash = &tce->hash_proc_finfo;
	}
}

GateannFilterCoder *
gateann_filter_coder_create(Relation index, const GateannMetaPageData *meta, const char *dict)
{
	GateannFilterCoder *coder = palloc0(sizeof(GateannFilterCoder));
	int			c;

	coder->meta = meta;
	coder->index_name = pstrdup(RelationGetRelationName(index));
	gateann_filter_slot_types(meta, coder->types);
	for (c = 0; c < meta->nfilter; c++)
		gateann_filter_coder_column_init(&coder->cols[c], &meta->filter[c],
						  index->rd_indcollation[c + 1], dict);
	return coder;
}

/* Two Bloom bits of an element hash */
static inline uint64
bloom_bits(uint32 h)
{
	return (UINT64CONST(1) << (h & 63)) | (UINT64CONST(1) << ((h >> 6) & 63));
}

uint64
gateann_filter_bloom_of_element(const GateannCoderColumn *cc, Datum elem)
{
	return bloom_bits(DatumGetUInt32(FunctionCall1Coll(cc->hash, cc->collation, elem)));
}

/* Code of a scalar value: dictionary position, or equi-depth bucket */
static uint8
scalar_code(const GateannCoderColumn *cc, Datum value)
{
	const GateannFilterColumn *col = cc->col;
	int			lo = 0,
				hi = col->nbounds;

	if (cc->cmp == NULL)
		return GATEANN_CODE_UNKNOWN;
	/* first bound >= value */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (DatumGetInt32(FunctionCall2Coll(cc->cmp, cc->collation, cc->dict[mid], value)) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (col->dict_exact)
	{
		if (lo < col->nbounds &&
			DatumGetInt32(FunctionCall2Coll(cc->cmp, cc->collation, cc->dict[lo], value)) == 0)
			return (uint8) lo;
		return GATEANN_CODE_UNKNOWN;	/* a value the dictionary does not know */
	}
	return (uint8) lo;			/* bucket lo: (bound[lo-1], bound[lo]] */
}

void
gateann_filter_coder_code(GateannFilterCoder *coder, const uint8 *filter_area,
						  uint32 id, uint8 *const *cols)
{
	const GateannMetaPageData *meta = coder->meta;
	int			c;

	for (c = 0; c < meta->nfilter; c++)
	{
		GateannCoderColumn *cc = &coder->cols[c];
		Datum		value;
		GateannSlot slot = gateann_filter_read(meta, filter_area, c, coder->types, &value);
		bool		notnull = slot != GATEANN_SLOT_NULL;
		bool		overflow = slot == GATEANN_SLOT_OVERFLOW;

		if (slot == GATEANN_SLOT_DAMAGED)
			gateann_filter_report_damage(coder->index_name, c);
		if (cc->col->kind == GATEANN_FILTER_KIND_SCALAR)
		{
			uint8		code;

			if (!notnull)
				code = GATEANN_CODE_NULL;
			else if (overflow)
				code = GATEANN_CODE_UNKNOWN;
			else
				code = scalar_code(cc, value);
			cols[c][id] = code;
		}
		else if (cc->col->kind == GATEANN_FILTER_KIND_JSONB)
		{
			uint64		bits[GATEANN_JSONB_BLOOM_WORDS] = {0};

			if (overflow)
				memset(bits, 0xFF, sizeof(bits));	/* unknown: matches anything */
			else if (notnull)
			{
				Jsonb	   *jb = DatumGetJsonbP(value);

				gateann_filter_jsonb_bits(jb, true, bits);
				if ((Pointer) jb != DatumGetPointer(value))
					pfree(jb);
			}
			memcpy(cols[c] + (Size) id * sizeof(bits), bits, sizeof(bits));
		}
		else
		{
			uint64		bloom = 0;

			if (overflow)
				bloom = ~UINT64CONST(0);	/* unknown labels: matches anything */
			else if (notnull)
			{
				ArrayType  *arr = DatumGetArrayTypeP(value);
				Datum	   *elems;
				bool	   *nulls;
				int			n,
							i;

				deconstruct_array(arr, cc->elemtype, cc->elemlen, cc->elembyval,
								  cc->elemalign, &elems, &nulls, &n);
				for (i = 0; i < n; i++)
					if (!nulls[i])
						bloom |= gateann_filter_bloom_of_element(cc, elems[i]);
				pfree(elems);
				pfree(nulls);
			}
			memcpy(cols[c] + (Size) id * sizeof(uint64), &bloom, sizeof(uint64));
		}
	}
}
