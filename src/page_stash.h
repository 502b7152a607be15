/*
 * page_stash.h — the node pages one scan has read, kept for the rest of it
 * (page_stash.c).
 *
 * A page of an index whose records are smaller than a page holds several
 * nodes, and a search often needs more than one of them: locality_order
 * numbers nodes cluster by cluster, so a node's near neighbours tend to
 * share its page.  A scan keeps copies of the pages its reads brought in;
 * a later candidate on one of them is taken from the copy, without a read
 * (page_hits), and the other records of a page just read are candidates
 * for page search (scan.c).
 *
 * A copy is put when its read is applied, in dispatch order, so that what
 * the stash holds -- and so what a scan returns -- does not depend on
 * device timing.  A copy is as current as the read that brought it: it
 * comes with the page's LSN, and the caller compares that with the block's
 * mark (store.h) before using it, as it would a read of the file.  The
 * stash is a ring: the oldest copy goes first.
 */
#ifndef GATEANN_PAGE_STASH_H
#define GATEANN_PAGE_STASH_H

#include "postgres.h"

#include "storage/block.h"

typedef struct GateannPageStash
{
	int			capacity;		/* pages */
	int			used;			/* filled slots */
	int			next;			/* slot the next put overwrites */
	BlockNumber *blocks;		/* capacity: block of each slot */
	bool	   *from_file;		/* capacity: read from the index's file */
	char	  **pages;			/* capacity: each slot's BLCKSZ bytes */
} GateannPageStash;

/* Copies of pages a scan keeps (64 pages: 512 kB with 8 kB pages) */
#define GATEANN_PAGE_STASH_PAGES	64

extern void gateann_page_stash_init(GateannPageStash *stash, int capacity);
extern void gateann_page_stash_reset(GateannPageStash *stash);

/* The copy of block blkno, or NULL; *from_file: it was read from the file */
extern const char *gateann_page_stash_get(const GateannPageStash *stash, BlockNumber blkno,
										  bool *from_file);

/*
 * Keep *page (BLCKSZ bytes, palloc'd) as block blkno's copy, replacing an
 * older one: the stash takes the buffer and hands back in *page the one it
 * no longer needs (no copy).
 */
extern void gateann_page_stash_put(GateannPageStash *stash, BlockNumber blkno, char **page,
								   bool from_file);

#endif							/* GATEANN_PAGE_STASH_H */
