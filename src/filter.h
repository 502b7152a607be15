/*
 * filter.h — filter columns (the second and later index columns): their
 * layout inside node records and their serialisation during a build.
 *
 * This issue stores exact copies of the values in each record; evaluating
 * predicates against them (and the in-memory filter store) builds on this.
 */
#ifndef GATEANN_FILTER_H
#define GATEANN_FILTER_H

#include "gateann.h"

/* Varlena values longer than this are flagged overflowed, not copied. */
#define GATEANN_FILTER_MAX_INLINE	256
/* Slot payload for a variable-width column that had no values at build */
#define GATEANN_FILTER_DEFAULT_INLINE	32

typedef struct GateannFilterLayout
{
	int			ncols;
	GateannFilterColumn cols[GATEANN_MAX_FILTER_COLS];
	uint32		max_varlena[GATEANN_MAX_FILTER_COLS];	/* seen during build */
} GateannFilterLayout;

/* Serialised filter values of every node collected during a build. */
typedef struct GateannFilterArena
{
	char	   *data;
	Size		used;
	Size		allocated;
	Size	   *node_offset;	/* per node */
	uint32		nnodes;
	uint32		node_capacity;
} GateannFilterArena;

extern GateannFilterLayout *gateann_filter_layout_create(Relation index);
extern void gateann_filter_arena_init(GateannFilterArena *arena,
									  const GateannFilterLayout *layout);
extern void gateann_filter_arena_add(GateannFilterArena *arena,
									 GateannFilterLayout *layout,
									 Datum *values, bool *isnull);
extern Size gateann_filter_arena_bytes(const GateannFilterArena *arena);

/* Decide slot widths and offsets; fills meta->nfilter, filter[], filter_size. */
extern void gateann_filter_layout_to_meta(const GateannFilterLayout *layout,
										  GateannMetaPageData *meta);

/* Write node `id`'s filter area (meta->filter_size bytes at dst). */
extern void gateann_filter_write_record(const GateannMetaPageData *meta,
										const GateannFilterArena *arena,
										uint32 id, uint8 *dst);

/*
 * Read column `col` back from a record's filter area: returns false for
 * NULL; *overflow is set when the value was too long to copy (then *value
 * is not set).  Pointers into `area` are returned for by-reference types.
 */
extern bool gateann_filter_read(const GateannMetaPageData *meta, const uint8 *area,
								int col, Datum *value, bool *overflow);

#endif							/* GATEANN_FILTER_H */
