/*
 * filter.c — filter column copies inside node records.
 *
 * Record filter area:
 *
 *   uint8 flags[nfilter]            GATEANN_FILTER_NULL / _OVERFLOW
 *   (padding to 8)
 *   slot per column at its offset:
 *     fixed-width types: the value, typlen bytes (store_att_byval layout
 *                        for by-value types)
 *     variable-width:    uint32 length, 4 bytes of padding, then the
 *                        detoasted datum (4-byte varlena header included,
 *                        so 8-byte aligned), width fixed at build
 *
 * During a build, each node's values are first serialised compactly into an
 * arena (flags + raw bytes) because slot widths for variable-width columns
 * depend on the longest value, known only after the heap scan.
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

/* uint32 length + padding, so the copied datum is 8-byte aligned */
#define VARLENA_SLOT_HEADER	sizeof(uint64)

GateannFilterLayout *
gateann_filter_layout_create(Relation index)
{
	TupleDesc	desc = RelationGetDescr(index);
	GateannFilterLayout *layout = palloc0(sizeof(GateannFilterLayout));
	int			natts = IndexRelationGetNumberOfKeyAttributes(index);
	int			i;

	layout->ncols = natts - 1;
	for (i = 1; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		GateannFilterColumn *col = &layout->cols[i - 1];

		col->typid = att->atttypid;
		col->typlen = att->attlen;
		col->typbyval = att->attbyval;
		col->typalign = att->attalign;
		if (col->typlen == -2 || col->typlen == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("gateann cannot store column type %s as a filter column",
							format_type_be(col->typid))));
		if (col->typlen > GATEANN_FILTER_MAX_INLINE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("gateann cannot store column type %s (%d bytes) as a filter column",
							format_type_be(col->typid), col->typlen)));
	}
	return layout;
}

void
gateann_filter_arena_init(GateannFilterArena *arena, const GateannFilterLayout *layout)
{
	memset(arena, 0, sizeof(*arena));
}

static void
arena_reserve(GateannFilterArena *arena, Size bytes)
{
	if (arena->used + bytes <= arena->allocated)
		return;
	if (arena->allocated == 0)
	{
		arena->allocated = Max((Size) 65536, bytes);
		arena->data = palloc_extended(arena->allocated, MCXT_ALLOC_HUGE);
	}
	else
	{
		while (arena->used + bytes > arena->allocated)
			arena->allocated *= 2;
		arena->data = repalloc_huge(arena->data, arena->allocated);
	}
}

void
gateann_filter_arena_add(GateannFilterArena *arena, GateannFilterLayout *layout,
						 Datum *values, bool *isnull)
{
	int			c;

	if (arena->nnodes == arena->node_capacity)
	{
		arena->node_capacity = arena->node_capacity == 0 ? 1024 : arena->node_capacity * 2;
		if (arena->node_offset == NULL)
			arena->node_offset = palloc_extended(sizeof(Size) * arena->node_capacity,
												 MCXT_ALLOC_HUGE);
		else
			arena->node_offset = repalloc_huge(arena->node_offset,
											   sizeof(Size) * arena->node_capacity);
	}
	arena->node_offset[arena->nnodes++] = arena->used;
	if (layout->ncols == 0)
		return;

	for (c = 0; c < layout->ncols; c++)
	{
		GateannFilterColumn *col = &layout->cols[c];

		if (isnull[c])
		{
			arena_reserve(arena, 1);
			arena->data[arena->used++] = GATEANN_FILTER_NULL;
		}
		else if (col->typlen > 0)
		{
			arena_reserve(arena, 1 + col->typlen);
			arena->data[arena->used++] = 0;
			if (col->typbyval)
				store_att_byval(arena->data + arena->used, values[c], col->typlen);
			else
				memcpy(arena->data + arena->used, DatumGetPointer(values[c]), col->typlen);
			arena->used += col->typlen;
		}
		else
		{
			struct varlena *v = PG_DETOAST_DATUM(values[c]);
			uint32		len = VARSIZE(v);

			if (len > GATEANN_FILTER_MAX_INLINE)
			{
				arena_reserve(arena, 1);
				arena->data[arena->used++] = GATEANN_FILTER_OVERFLOW;
			}
			else
			{
				arena_reserve(arena, 1 + sizeof(uint32) + len);
				arena->data[arena->used++] = 0;
				memcpy(arena->data + arena->used, &len, sizeof(uint32));
				memcpy(arena->data + arena->used + sizeof(uint32), v, len);
				arena->used += sizeof(uint32) + len;
				layout->max_varlena[c] = Max(layout->max_varlena[c], len);
			}
			if ((Pointer) v != DatumGetPointer(values[c]))
				pfree(v);
		}
	}
}

Size
gateann_filter_arena_bytes(const GateannFilterArena *arena)
{
	return arena->allocated + sizeof(Size) * arena->node_capacity;
}

void
gateann_filter_layout_to_meta(const GateannFilterLayout *layout, GateannMetaPageData *meta)
{
	uint32		off;
	int			c;

	meta->nfilter = layout->ncols;
	off = MAXALIGN(layout->ncols);
	for (c = 0; c < layout->ncols; c++)
	{
		GateannFilterColumn *col = &meta->filter[c];

		*col = layout->cols[c];
		off = MAXALIGN(off);
		col->offset = off;
		if (col->typlen > 0)
			col->width = col->typlen;
		else
		{
			uint32		payload = layout->max_varlena[c] > 0 ?
				layout->max_varlena[c] : GATEANN_FILTER_DEFAULT_INLINE;

			col->width = VARLENA_SLOT_HEADER + payload;
		}
		off += col->width;
	}
	meta->filter_size = layout->ncols > 0 ? MAXALIGN(off) : 0;
}

void
gateann_filter_write_record(const GateannMetaPageData *meta,
							const GateannFilterArena *arena, uint32 id, uint8 *dst)
{
	const char *src;
	int			c;

	if (meta->nfilter == 0)
		return;
	src = arena->data + arena->node_offset[id];
	for (c = 0; c < meta->nfilter; c++)
	{
		const GateannFilterColumn *col = &meta->filter[c];
		uint8		flags = (uint8) *src++;

		dst[c] = flags;
		if (flags & (GATEANN_FILTER_NULL | GATEANN_FILTER_OVERFLOW))
			continue;
		if (col->typlen > 0)
		{
			memcpy(dst + col->offset, src, col->typlen);
			src += col->typlen;
		}
		else
		{
			uint32		len;

			memcpy(&len, src, sizeof(uint32));

			/*
			 * The build sized the slot from its longest value; a longer
			 * value inserted later is flagged overflowed, like one past
			 * GATEANN_FILTER_MAX_INLINE (the executor's recheck decides).
			 */
			if (len + VARLENA_SLOT_HEADER > col->width)
			{
				dst[c] = flags | GATEANN_FILTER_OVERFLOW;
				src += sizeof(uint32) + len;
				continue;
			}
			memcpy(dst + col->offset, &len, sizeof(uint32));
			memcpy(dst + col->offset + VARLENA_SLOT_HEADER, src + sizeof(uint32), len);
			src += sizeof(uint32) + len;
		}
	}
}

void
gateann_filter_report_damage(const char *index_name, int col)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("gateann index \"%s\": a record's copy of filter column %d is damaged",
					index_name, col + 2),
			 errhint("REINDEX the index.")));
}

void
gateann_filter_slot_types(const GateannMetaPageData *meta, GateannSlotType *types)
{
	int			c;

	for (c = 0; c < meta->nfilter; c++)
	{
		types[c].elemtype = get_element_type(meta->filter[c].typid);
		if (OidIsValid(types[c].elemtype))
			get_typlenbyvalalign(types[c].elemtype, &types[c].elemlen,
								 &types[c].elembyval, &types[c].elemalign);
	}
}

/*
 * Is the array in a record's slot (len bytes, its varlena header checked)
 * one whose every element lies inside it?  The array functions trust their
 * input; this is what they would trust.
 */
static bool
slot_array_sane(const ArrayType *a, uint32 len, const GateannSlotType *t)
{
	int			ndim = ARR_NDIM(a);
	const int  *dims = ARR_DIMS(a);
	const bits8 *nullbits = ARR_NULLBITMAP(a);
	const char *end = (const char *) a + len;
	const char *p;
	int64		nitems = 1;
	int64		i;
	int			d;

	if (ndim < 0 || ndim > MAXDIM || ARR_ELEMTYPE(a) != t->elemtype ||
		len < ARR_OVERHEAD_NONULLS(ndim))
		return false;
	for (d = 0; d < ndim; d++)
	{
		if (dims[d] < 0 || (nitems *= dims[d]) > MaxArraySize)
			return false;
	}
	if (ndim == 0)
		nitems = 0;
	if (ARR_HASNULL(a) ? a->dataoffset != ARR_OVERHEAD_WITHNULLS(ndim, nitems) ||
		(uint32) a->dataoffset > len : a->dataoffset != 0)
		return false;
	p = ARR_DATA_PTR(a);
	for (i = 0; i < nitems; i++)
	{
		if (nullbits && !(nullbits[i / 8] & (1 << (i % 8))))
			continue;
		p = (const char *) att_align_nominal(p, t->elemalign);
		if (t->elemlen > 0)
			p += t->elemlen;
		else if (t->elemlen == -1)
		{
			if (p + 1 > end || VARATT_IS_EXTERNAL(p) || VARATT_IS_COMPRESSED(p) ||
				(VARATT_IS_4B(p) && p + VARHDRSZ > end) || VARSIZE_ANY(p) < VARHDRSZ_SHORT)
				return false;
			p += VARSIZE_ANY(p);
		}
		else
			return false;		/* cstring elements: never stored */
		if (p > end)
			return false;
	}
	return true;
}

GateannSlot
gateann_filter_read(const GateannMetaPageData *meta, const uint8 *area, int col,
					const GateannSlotType *types, Datum *value)
{
	const GateannFilterColumn *fc = &meta->filter[col];
	const uint8 *slot = area + fc->offset;
	uint8		flags = area[col];
	uint32		len;
	const struct varlena *v;

	if (flags & ~(GATEANN_FILTER_NULL | GATEANN_FILTER_OVERFLOW))
		return GATEANN_SLOT_DAMAGED;
	if (flags & GATEANN_FILTER_NULL)
		return GATEANN_SLOT_NULL;
	if (flags & GATEANN_FILTER_OVERFLOW)
		return GATEANN_SLOT_OVERFLOW;
	if (fc->typlen > 0)
	{
		*value = fc->typbyval ? fetch_att(slot, true, fc->typlen) : PointerGetDatum(slot);
		return GATEANN_SLOT_VALUE;
	}

	/* a detoasted copy: uint32 length, then a varlena of that size, 4-byte header */
	memcpy(&len, slot, sizeof(uint32));
	v = (const struct varlena *) (slot + VARLENA_SLOT_HEADER);
	if (len < VARHDRSZ || len + VARLENA_SLOT_HEADER > fc->width ||
		!VARATT_IS_4B_U(v) || VARSIZE(v) != len)
		return GATEANN_SLOT_DAMAGED;
	if (OidIsValid(types[col].elemtype) &&
		!slot_array_sane((const ArrayType *) v, len, &types[col]))
		return GATEANN_SLOT_DAMAGED;
	*value = PointerGetDatum(v);
	return GATEANN_SLOT_VALUE;
}

/* ======================================================================
 * The in-memory filter store: dictionaries, node codes, scan keys
 * ====================================================================== */

int
gateann_filter_store_width(const GateannFilterColumn *col)
{
	return col->kind == GATEANN_FILTER_KIND_BLOOM ? (int) sizeof(uint64) : 1;
}

/* Scalar columns get a dictionary; arrays of a hashable element, Bloom bits. */
uint8
gateann_filter_column_kind(Oid typid)
{
	Oid			elem = get_element_type(typid);

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
static Datum *
dictionary_values(const GateannFilterColumn *col, const char *dict)
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

typedef struct CoderColumn
{
	const GateannFilterColumn *col;
	int			width;
	Datum	   *dict;			/* scalar: dictionary / bounds */
	FmgrInfo   *cmp;
	Oid			collation;
	/* bloom */
	Oid			elemtype;
	int16		elemlen;
	bool		elembyval;
	char		elemalign;
	FmgrInfo   *hash;
} CoderColumn;

struct GateannFilterCoder
{
	const GateannMetaPageData *meta;
	const char *index_name;
	GateannSlotType types[GATEANN_MAX_FILTER_COLS];
	CoderColumn cols[GATEANN_MAX_FILTER_COLS];
};

static void
coder_column_init(CoderColumn *cc, const GateannFilterColumn *col, Oid collation,
				  const char *dict)
{
	cc->col = col;
	cc->width = gateann_filter_store_width(col);
	cc->collation = collation;
	if (col->kind == GATEANN_FILTER_KIND_SCALAR)
	{
		TypeCacheEntry *tce = lookup_type_cache(col->typid, TYPECACHE_CMP_PROC_FINFO);

		cc->cmp = OidIsValid(tce->cmp_proc) ? &tce->cmp_proc_finfo : NULL;
		cc->dict = dictionary_values(col, dict);
	}
	else
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
		coder_column_init(&coder->cols[c], &meta->filter[c],
						  index->rd_indcollation[c + 1], dict);
	return coder;
}

/* Two Bloom bits of an element hash */
static inline uint64
bloom_bits(uint32 h)
{
	return (UINT64CONST(1) << (h & 63)) | (UINT64CONST(1) << ((h >> 6) & 63));
}

static uint64
bloom_of_element(const CoderColumn *cc, Datum elem)
{
	return bloom_bits(DatumGetUInt32(FunctionCall1Coll(cc->hash, cc->collation, elem)));
}

/* Code of a scalar value: dictionary position, or equi-depth bucket */
static uint8
scalar_code(const CoderColumn *cc, Datum value)
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
		CoderColumn *cc = &coder->cols[c];
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
						bloom |= bloom_of_element(cc, elems[i]);
				pfree(elems);
				pfree(nulls);
			}
			memcpy(cols[c] + (Size) id * sizeof(uint64), &bloom, sizeof(uint64));
		}
	}
}

/* ---- scan keys ------------------------------------------------------------ */

/* Strategy numbers of the filter operator families (sql/gateann--*.sql) */
#define STRAT_LT		1
#define STRAT_LE		2
#define STRAT_EQ		3
#define STRAT_GE		4
#define STRAT_GT		5
#define STRAT_OVERLAP	6
#define STRAT_CONTAINS	7
#define STRAT_CONTAINED	8

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
	uint64	   *masks;			/* bloom */
	int			nmasks;
	bool		any_mask;		/* && : any mask; @> : the one mask */
} FilterKey;

struct GateannFilter
{
	int			nkeys;
	FilterKey  *keys;
	bool		recheck;		/* some key is not evaluated here at all */
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

static bool
call_bool(FmgrInfo *f, Oid collation, Datum a, Datum b)
{
	return DatumGetBool(FunctionCall2Coll(f, collation, a, b));
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
	Datum	   *bounds = dictionary_values(col, dict);
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
	CoderColumn cc;
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
	coder_column_init(&cc, col, index->rd_indcollation[k->col + 1], NULL);
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
	if (k->strategy == STRAT_CONTAINS)
	{
		uint64		mask = 0;

		for (i = 0; i < n; i++)
			if (!nulls[i])
				mask |= bloom_of_element(&cc, elems[i]);
		k->masks[k->nmasks++] = mask;
		k->any_mask = false;
	}
	else
	{
		for (i = 0; i < n; i++)
			if (!nulls[i])
				k->masks[k->nmasks++] = bloom_of_element(&cc, elems[i]);
		k->any_mask = true;
		if (k->nmasks == 0)
			*never = true;		/* nothing overlaps an empty set */
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
			 * NULL vectors are not indexed: IS NOT NULL holds for every row
			 * (PostgreSQL sets SK_ISNULL on that key too, so test it first),
			 * IS NULL and a comparison with NULL for none.
			 */
			if (sk->sk_flags & SK_SEARCHNOTNULL)
				continue;
			if (sk->sk_flags & (SK_SEARCHNULL | SK_ISNULL))
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
		if (sk->sk_strategy < STRAT_LT || sk->sk_strategy > STRAT_CONTAINED)
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
	else
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
