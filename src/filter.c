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
#include "utils/jsonb.h"
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
		types[c].is_jsonb = meta->filter[c].typid == JSONBOID;
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

/*
 * Is the jsonb container at jc (size bytes) one whose every entry, key and
 * nested container lies inside it?  The jsonb functions trust their input
 * (offsets, lengths, a numeric's digits); this is what they would trust.
 * A nested container is smaller than its parent: the recursion ends.
 */
static bool
slot_jsonb_container_sane(const JsonbContainer *jc, uint32 size)
{
	uint32		count,
				kind,
				nentries,
				avail,
				i;

	if (size < sizeof(uint32))
		return false;
	count = jc->header & JB_CMASK;
	kind = jc->header & ~JB_CMASK;
	if (count > size / sizeof(JEntry))
		return false;
	if (kind == JB_FOBJECT)
		nentries = count * 2;
	else if (kind == JB_FARRAY || (kind == (JB_FARRAY | JB_FSCALAR) && count == 1))
		nentries = count;
	else
		return false;
	if (sizeof(uint32) + (uint64) nentries * sizeof(JEntry) > size)
		return false;
	avail = size - sizeof(uint32) - nentries * sizeof(JEntry);
	for (i = 0; i < nentries; i++)
	{
		JEntry		je = jc->children[i];
		uint32		off = getJsonbOffset(jc, i);
		uint32		len = getJsonbLength(jc, i);
		const char *data = (const char *) &jc->children[nentries];
		uint32		pad = INTALIGN(off) - off;

		if ((uint64) off + len > avail)
			return false;
		if (kind == JB_FOBJECT && i < count && !JBE_ISSTRING(je))
			return false;		/* keys are strings */
		switch (je & JENTRY_TYPEMASK)
		{
			case JENTRY_ISSTRING:
			case JENTRY_ISBOOL_FALSE:
			case JENTRY_ISBOOL_TRUE:
			case JENTRY_ISNULL:
				break;
			case JENTRY_ISNUMERIC:
				{
					const char *num = data + off + pad;
					uint16		nheader;

					/*
					 * A 4-byte varlena header, then the numeric's own: one
					 * uint16 when its top bit says short (or special), two
					 * otherwise; the digits fill the rest.  A size short of
					 * that header would make the digit count wrap.
					 */
					if (len < pad + VARHDRSZ + sizeof(uint16) || !VARATT_IS_4B_U(num) ||
						VARSIZE(num) > len - pad)
						return false;
					memcpy(&nheader, num + VARHDRSZ, sizeof(uint16));
					if (VARSIZE(num) < VARHDRSZ + sizeof(uint16) * ((nheader & 0x8000) ? 1 : 2))
						return false;
					break;
				}
			case JENTRY_ISCONTAINER:
				if (len < pad ||
					!slot_jsonb_container_sane((const JsonbContainer *) (data + off + pad),
											   len - pad))
					return false;
				break;
			default:
				return false;
		}
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
	if (types[col].is_jsonb &&
		!slot_jsonb_container_sane((const JsonbContainer *) VARDATA(v), len - VARHDRSZ))
		return GATEANN_SLOT_DAMAGED;
	*value = PointerGetDatum(v);
	return GATEANN_SLOT_VALUE;
}
