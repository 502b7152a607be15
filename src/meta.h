/*
 * meta.h — the metapage (meta.c): read, checked, laid out, changed.
 */
#ifndef GATEANN_META_H
#define GATEANN_META_H

#include "gateann.h"

#include "access/generic_xlog.h"
#include "common/relpath.h"
#include "storage/bufmgr.h"

/*
 * Read the metapage into *meta (a copy; no lock or pin is kept).  Errors out
 * with ERRCODE_INDEX_CORRUPTED naming the index if the metapage is not a
 * gateann metapage of this format, or fails gateann_meta_problem: every
 * value the other modules take from it is checked here, once.
 */
extern void gateann_read_meta(Relation index, GateannMetaPageData *meta);

/*
 * The same without the checks of gateann_meta_problem (gateann_verify
 * reports them as rows instead).
 */
extern void gateann_read_meta_unchecked(Relation index, GateannMetaPageData *meta);

/*
 * Read the metapage into *meta without raising an error: false when it is
 * not a sound gateann metapage of this format (gateann_read_meta would have
 * raised one).  For the planner, which must not fail a query over a damaged
 * index that the query may not even use.
 */
extern bool gateann_peek_meta(Relation index, GateannMetaPageData *meta);

/*
 * What is wrong with the metapage of the index (a palloc'd
 * phrase completing "the metapage ..."), or NULL: values out of range,
 * entry points beyond the nodes, a record layout that does not follow from
 * dims, R, M and the filter columns, filter column types other than the
 * index's, regions beyond the end of the index.
 */
extern char *gateann_meta_problem(const GateannMetaPageData *meta, Relation index);

/* Fill in meta's record layout for its dims, R, M and filter columns. */
extern void gateann_layout_records(GateannMetaPageData *meta);

/* A build id that differs between any two builds of any index. */
extern uint64 gateann_new_build_id(Relation index);

/* Rewrite block 0 of `fork` with meta, without WAL (builds only). */
extern void gateann_write_meta_page(Relation index, ForkNumber fork,
									const GateannMetaPageData *meta);

/* The metapage contents of a page: a locked metapage buffer's or its GenericXLog copy */
static inline GateannMetaPageData *
GateannPageGetMeta(Page page)
{
	return (GateannMetaPageData *) PageGetContents(page);
}

/*
 * A change to the metapage alone: begin locks it exclusively and returns
 * its contents in a GenericXLog copy (the whole page logged when
 * full_image), to change in place; finish logs the change and unlocks.
 */
typedef struct GateannMetaUpdate
{
	Buffer		buf;
	GenericXLogState *state;
	Page		page;
} GateannMetaUpdate;

extern GateannMetaPageData *gateann_meta_update_begin(Relation index, GateannMetaUpdate *u,
													  bool full_image);
extern void gateann_meta_update_finish(GateannMetaUpdate *u);

#endif							/* GATEANN_META_H */
