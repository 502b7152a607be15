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

/*
 * The changes writers make to the metapage contents m (a locked buffer's
 * GenericXLog copy, in the record that writes the pages they concern).
 * Each keeps the metapage's rules in one place: entries[0] is entry_point;
 * freeing and taking a slot keep the free counts and cursor; every change
 * that can take a node's last way in counts in reach_changes.
 */
extern void gateann_meta_set_entry_point(GateannMetaPageData *m, uint32 id);
extern void gateann_meta_free_slot(GateannMetaPageData *m, uint32 id);
/* VACUUM frees slots from now on / is done (gateann.h, freeing_slots) */
extern void gateann_meta_set_freeing_slots(GateannMetaPageData *m, bool freeing);
extern void gateann_meta_take_slot(GateannMetaPageData *m, uint32 id);
extern void gateann_meta_append_node(GateannMetaPageData *m, uint32 id, BlockNumber node_pages);
extern void gateann_meta_add_deleted(GateannMetaPageData *m, uint32 n);
/* An inserted vector was coded with the codebook: poorly, or not (retrain.h) */
extern void gateann_meta_count_code(GateannMetaPageData *m, bool poor);

/*
 * Where a walk over the graph starts: the entry point, then the other entry
 * points (roots: room for GATEANN_MAX_ENTRIES + 1 ids).  Returns how many.
 */
extern int	gateann_meta_walk_roots(const GateannMetaPageData *m, uint32 *roots);
/* Records of halves: record_error covers an inserted vector's (gateann.h) */
extern void gateann_meta_cover_record_error(GateannMetaPageData *m, float error);
/* entries[0..n) become the entry points, entries[0] the entry point itself */
extern void gateann_meta_set_entries(GateannMetaPageData *m, const uint32 *entries, uint32 n);
/* id joins the entry points if there is room and it is not one; false if not */
extern bool gateann_meta_add_entry(GateannMetaPageData *m, uint32 id);

/* Is a reachability walk due though nothing is deleted (gateann.h, reach_changes)? */
static inline bool
gateann_meta_reach_walk_due(const GateannMetaPageData *m)
{
	return m->reach_changes != m->reach_checked;
}

/*
 * A walk that began when reach_changes was `changes` found every live node
 * reachable (after the links it logged): record it, in a record of its own
 * that follows theirs.
 */
extern void gateann_meta_set_reach_checked(Relation index, uint64 changes);

#endif							/* GATEANN_META_H */
