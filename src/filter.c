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
 *     variable-width:    uint32 length, then the detoasted datum (4-byte
 *                        varlena header included), width fixed at build
 *
 * During a build, each node's values are first serialised compactly into an
 * arena (flags + raw bytes) because slot widths for variable-width columns
 * depend on the longest value, known only after the heap scan.
 */
#include "postgres.h"

#include "filter.h"

#include "access/tupmacs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#define VARLENA_SLOT_HEADER	sizeof(uint32)

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
			/* the slot was sized from the longest value, so it fits */
			Assert(len + VARLENA_SLOT_HEADER <= col->width);
			memcpy(dst + col->offset, src, VARLENA_SLOT_HEADER + len);
			src += VARLENA_SLOT_HEADER + len;
		}
	}
}

bool
gateann_filter_read(const GateannMetaPageData *meta, const uint8 *area, int col,
					Datum *value, bool *overflow)
{
	const GateannFilterColumn *fc = &meta->filter[col];
	const uint8 *slot = area + fc->offset;

	*overflow = (area[col] & GATEANN_FILTER_OVERFLOW) != 0;
	if (area[col] & GATEANN_FILTER_NULL)
		return false;
	if (*overflow)
		return true;
	if (fc->typlen > 0)
		*value = fc->typbyval ? fetch_att(slot, true, fc->typlen) :
			PointerGetDatum(slot);
	else
		*value = PointerGetDatum(slot + VARLENA_SLOT_HEADER);
	return true;
}
