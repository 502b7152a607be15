/*
 * page_stash.c — the node pages one scan has read (page_stash.h).
 */
#include "postgres.h"

#include "page_stash.h"

void
gateann_page_stash_init(GateannPageStash *stash, int capacity)
{
	Assert(capacity > 0);
	stash->capacity = capacity;
	stash->blocks = palloc(sizeof(BlockNumber) * capacity);
	stash->from_file = palloc(sizeof(bool) * capacity);
	/* buffers come with the pages put (gateann_page_stash_put) */
	stash->pages = palloc0(sizeof(char *) * capacity);
	gateann_page_stash_reset(stash);
}

void
gateann_page_stash_reset(GateannPageStash *stash)
{
	stash->used = 0;
	stash->next = 0;
}

/* The slot holding blkno, or -1 (a few dozen compares: cheaper than a hash) */
static int
stash_slot(const GateannPageStash *stash, BlockNumber blkno)
{
	int			i;

	for (i = 0; i < stash->used; i++)
		if (stash->blocks[i] == blkno)
			return i;
	return -1;
}

const char *
gateann_page_stash_get(const GateannPageStash *stash, BlockNumber blkno, bool *from_file)
{
	int			slot = stash_slot(stash, blkno);

	if (slot < 0)
		return NULL;
	*from_file = stash->from_file[slot];
	return stash->pages[slot];
}

void
gateann_page_stash_put(GateannPageStash *stash, BlockNumber blkno, char **page,
					   bool from_file)
{
	int			slot = stash_slot(stash, blkno);
	char	   *old;

	if (slot < 0)
	{
		slot = stash->next;
		stash->next = (stash->next + 1) % stash->capacity;
		if (stash->used < stash->capacity)
			stash->used++;
		stash->blocks[slot] = blkno;
	}
	Assert(slot < stash->used);
	stash->from_file[slot] = from_file;
	old = stash->pages[slot];
	stash->pages[slot] = *page;
	*page = old != NULL ? old : palloc(BLCKSZ);
}
