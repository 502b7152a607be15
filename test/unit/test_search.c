/*
 * test_search.c — graph walks and prefix links (src/search.c).
 *
 * The bugs these guard against: an edge to be linked into a list shorter
 * than the prefix was not added at all (VACUUM left nodes unreachable with
 * max_neighbors = tunnel_neighbors), and linking always pushed the last
 * prefix entry out, stranding the node it pointed to when that was its only
 * way in.  And the one best-first walk of build, insert and VACUUM: list
 * order, the scan point moving back to a closer insertion, the expansion
 * limit.
 */
#include "test_common.h"
#include "search.h"

#include <string.h>

#define MAXDEG 8

/* list contents as a string, for messages */
static const char *
show(const uint32_t *l, int n)
{
	static char buf[256];
	int			i,
				o = 0;

	buf[0] = 0;
	for (i = 0; i < n && o < 200; i++)
		o += snprintf(buf + o, sizeof(buf) - o, "%s%u", i ? "," : "", l[i]);
	return buf;
}

static int
pos_of(const uint32_t *l, int n, uint32_t x)
{
	int			i;

	for (i = 0; i < n; i++)
		if (l[i] == x)
			return i;
	return -1;
}

static void
case_short_list_appends(void)
{
	uint32_t	list[] = {5, 6};
	uint32_t	out[MAXDEG + 1];
	int			n = gateann_prefix_link(list, 2, MAXDEG, 9, 4, NULL, 0, out);

	CHECK(n == 3 && out[2] == 9, "got %d: %s\n", n, show(out, n));
}

static void
case_in_prefix_unchanged(void)
{
	uint32_t	list[] = {5, 6, 7, 8, 9};
	uint32_t	out[MAXDEG + 1];

	CHECK(gateann_prefix_link(list, 5, MAXDEG, 7, 4, NULL, 0, out) == -1,
		  "an entry already in the prefix changed the list\n");
}

static void
case_past_prefix_moved_in(void)
{
	uint32_t	list[] = {1, 2, 3, 4, 5, 6};
	uint32_t	out[MAXDEG + 1];
	int			n = gateann_prefix_link(list, 6, MAXDEG, 6, 3, NULL, 0, out);

	CHECK(n == 6, "length %d\n", n);
	CHECK(pos_of(out, n, 6) >= 0 && pos_of(out, n, 6) < 3, "6 not in the prefix: %s\n",
		  show(out, n));
	CHECK(pos_of(out, n, 3) == 3, "the entry pushed out is not just past the prefix: %s\n",
		  show(out, n));
}

/* the entry that leaves a full prefix is the one with another way in */
static void
case_victim_by_indeg(void)
{
	uint32_t	list[] = {10, 11, 12, 13};
	uint32_t	indeg[20] = {0};
	uint32_t	out[MAXDEG + 1];
	int			n;

	indeg[10] = 1;
	indeg[11] = 3;
	indeg[12] = 1;
	indeg[13] = 1;
	n = gateann_prefix_link(list, 4, 4, 15, 3, indeg, 20, out);
	CHECK(n == 4, "length %d (a full list keeps max_n)\n", n);
	CHECK(pos_of(out, n, 15) >= 0 && pos_of(out, n, 15) < 3, "new entry not in prefix: %s\n",
		  show(out, n));
	CHECK(pos_of(out, n, 11) == 3, "11 (3 in-edges) should have left the prefix: %s\n",
		  show(out, n));
	CHECK(pos_of(out, n, 10) < 3 && pos_of(out, n, 12) < 3, "10, 12 should stay: %s\n",
		  show(out, n));
	CHECK(pos_of(out, n, 13) == -1, "a full list loses its last entry: %s\n", show(out, n));
	CHECK(indeg[15] == 1 && indeg[11] == 2, "in-degrees not updated: %u %u\n", indeg[15],
		  indeg[11]);
}

/* a prefix can take an entry if it has room or an entry with another way in */
static void
case_prefix_has_spare(void)
{
	uint32_t	prefix[] = {3, 4, 5};
	uint32_t	indeg[8] = {0, 0, 0, 1, 1, 1, 0, 0};

	CHECK(gateann_prefix_has_spare(prefix, 2, 3, indeg, 8), "a prefix with room has none\n");
	CHECK(!gateann_prefix_has_spare(prefix, 3, 3, indeg, 8),
		  "a full prefix of single in-edges has room\n");
	indeg[4] = 2;
	CHECK(gateann_prefix_has_spare(prefix, 3, 3, indeg, 8),
		  "an entry with a second in-edge is not seen\n");
	CHECK(!gateann_prefix_has_spare(prefix, 3, 3, indeg, 4),
		  "ids beyond indeg_len were read\n");
}

/* a walk over a small graph with a refused node */
typedef struct
{
	int			deg[6];
	uint32_t	adj[6][MAXDEG];
	int			refused;
} Tiny;

static int
tiny_neighbors(void *arg, uint32_t id, uint32_t *out, int max)
{
	Tiny	   *t = (Tiny *) arg;
	int			n = t->deg[id] < max ? t->deg[id] : max;

	if ((int) id == t->refused)
		return -1;
	memcpy(out, t->adj[id], sizeof(uint32_t) * n);
	return n;
}

static void
case_reach(void)
{
	Tiny		t = {{2, 1, 1, 0, 1, 0}, {{1, 2}, {3}, {4}, {0}, {5}, {0}}, 2};
	uint8_t		reached[1] = {0};
	uint32_t	queue[6],
				row[MAXDEG];
	uint32_t	n = gateann_reach(6, 0, tiny_neighbors, &t, MAXDEG, reached, queue, row);

	/* 0 -> 1 -> 3; 0 -> 2 (refused: marked, not walked) -/-> 4 -> 5 */
	CHECK(n == 3, "walked %u nodes, want 3\n", n);
	CHECK(gateann_reached(reached, 2) && !gateann_reached(reached, 4) &&
		  !gateann_reached(reached, 5), "reached bits 0x%02x\n", reached[0]);
	/* a prefix of 1 neighbor: only 0 -> 1 -> 3 */
	reached[0] = 0;
	t.refused = -1;
	n = gateann_reach(6, 0, tiny_neighbors, &t, 1, reached, queue, row);
	CHECK(n == 3 && !gateann_reached(reached, 2), "prefix walk reached %u (0x%02x)\n", n,
		  reached[0]);
}


static void
case_candidate_insert(void)
{
	GateannCandidate l[3];
	int			n = 0;

	CHECK(gateann_candidate_insert(l, &n, 3, 1, 2.0f) == 0, "first insert\n");
	CHECK(gateann_candidate_insert(l, &n, 3, 2, 1.0f) == 0, "closer goes first\n");
	/* an equal distance goes behind the one already there */
	CHECK(gateann_candidate_insert(l, &n, 3, 3, 2.0f) == 2 && l[1].id == 1 && l[2].id == 3,
		  "tie order %u,%u\n", l[1].id, l[2].id);
	/* full: not closer than the last is refused; closer pushes the last out */
	CHECK(gateann_candidate_insert(l, &n, 3, 4, 2.0f) == -1 && n == 3, "full list took a tie\n");
	CHECK(gateann_candidate_insert(l, &n, 3, 5, 1.5f) == 1 && n == 3 && l[2].id == 1,
		  "push-out: %u,%u,%u\n", l[0].id, l[1].id, l[2].id);
}

/* What a merge dropped, in order */
typedef struct Dropped
{
	uint32_t	ids[64];
	int			n;
} Dropped;

static void
record_drop(void *arg, uint32_t id, float dist)
{
	Dropped    *d = arg;

	(void) dist;
	if (d->n < 64)
		d->ids[d->n++] = id;
}

/*
 * A batch merge gives the list that inserting the batch one entry at a time
 * gives (the scan merges, build and insert insert one by one); it drops the
 * new entries that do not fit and the old unexpanded ones pushed out, and
 * returns where the best new entry went.
 */
static void
case_candidate_merge(void)
{
	TestRng		rng = {12345};
	int			round;
	GateannCandidate l[3];
	GateannCandidate b[2];
	Dropped		d = {{0}, 0};
	int			n = 0;

	for (round = 0; round < 2000; round++)
	{
		GateannCandidate merged[48],
					one[48],
					batch[16];
		int			L = 1 + (int) (trng_next(&rng) % 40);
		int			size = (int) (trng_next(&rng) % (L + 1));
		int			nb = (int) (trng_next(&rng) % 17);
		int			nmerged,
					none = 0,
					nbatch = 0,
					pos,
					best = -1,
					i;

		/* distances on a coarse grid: many ties */
		for (i = 0; i < size; i++)
			gateann_candidate_insert(one, &none, L, 100 + i, (float) (trng_next(&rng) % 6));
		for (i = 0; i < none; i++)
			one[i].expanded = (int) (trng_next(&rng) % 2);
		memcpy(merged, one, sizeof(one));
		nmerged = none;
		for (i = 0; i < nb; i++)
			gateann_candidate_insert(batch, &nbatch, nb, 200 + i, (float) (trng_next(&rng) % 6));
		pos = gateann_candidate_merge(merged, &nmerged, L, batch, nbatch, NULL, NULL);
		for (i = 0; i < nbatch; i++)
			gateann_candidate_insert(one, &none, L, batch[i].id, batch[i].dist);
		/* the best new entry is the first new one in the list */
		for (i = 0; i < none; i++)
			if (one[i].id >= 200)
			{
				best = i;
				break;
			}
		CHECK(nmerged == none, "round %d: size %d, one by one %d\n", round, nmerged, none);
		for (i = 0; i < none && i < nmerged; i++)
			CHECK(merged[i].id == one[i].id && merged[i].expanded == one[i].expanded,
				  "round %d: entry %d is %u, one by one %u\n", round, i, merged[i].id, one[i].id);
		CHECK(pos == best, "round %d: best new entry at %d, one by one %d\n", round, pos, best);
	}

	/* drops: a new entry that does not fit, then an old unexpanded one */
	gateann_candidate_insert(l, &n, 3, 1, 1.0f);
	gateann_candidate_insert(l, &n, 3, 2, 2.0f);
	gateann_candidate_insert(l, &n, 3, 3, 3.0f);
	l[2].expanded = 1;
	b[0].id = 4;
	b[0].dist = 0.5f;
	b[0].expanded = 0;
	b[1].id = 5;
	b[1].dist = 3.0f;
	b[1].expanded = 0;
	CHECK(gateann_candidate_merge(l, &n, 3, b, 2, record_drop, &d) == 0 && n == 3,
		  "merge position\n");
	CHECK(l[0].id == 4 && l[1].id == 1 && l[2].id == 2, "merged list %u,%u,%u\n",
		  l[0].id, l[1].id, l[2].id);
	/* 5 ties with the expanded 3 and ranks after it: 5 dropped, 3 gone silently */
	CHECK(d.n == 1 && d.ids[0] == 5, "dropped %d: %u\n", d.n, d.ids[0]);
	b[0].id = 6;
	b[0].dist = 0.1f;
	CHECK(gateann_candidate_merge(l, &n, 3, b, 1, record_drop, &d) == 0 && d.n == 2 &&
		  d.ids[1] == 2, "an unexpanded entry pushed out is dropped\n");
}

/* A walk over points on a line: dist = |pos - q|, the visited set by flags */
typedef struct LineWalk
{
	float		pos[8];
	int			deg[8];
	uint32_t	adj[8][3];
	float		q;
	int			seen[8];
	uint32_t	order[8];		/* expansion order */
	int			nexp;
} LineWalk;

static int
line_expand(void *arg, uint32_t id, float dist, uint32_t *ids, float *dists)
{
	LineWalk   *w = arg;
	int			i,
				n = 0;

	w->order[w->nexp++] = id;
	for (i = 0; i < w->deg[id]; i++)
	{
		uint32_t	nb = w->adj[id][i];

		if (w->seen[nb])
			continue;
		w->seen[nb] = 1;
		ids[n] = nb;
		dists[n++] = w->pos[nb] > w->q ? w->pos[nb] - w->q : w->q - w->pos[nb];
	}
	return n;
}

static void
case_best_first(void)
{
	/*
	 * 0 at 5 (the seed) -> 1 at 1, 2 at 9; 1 -> 3 at 0.5; 3 -> 4 at 20.  Query
	 * at 0: 1 lands before the expanded seed and is expanded next, then 3
	 * (before both), then 2 and 4 by distance.
	 */
	LineWalk	w = {{5, 1, 9, 0.5f, 20}, {2, 1, 0, 1, 0}, {{1, 2}, {3}, {0}, {4}, {0}}, 0};
	GateannCandidate l[8];
	uint32_t	ids[3];
	float		dists[3];
	int			n = 0,
				size;

	w.seen[0] = 1;
	gateann_candidate_insert(l, &n, 8, 0, 5.0f);
	size = gateann_best_first(l, n, 8, -1, line_expand, &w, ids, dists);
	CHECK(size == 5 && w.nexp == 5, "size %d, %d expansions\n", size, w.nexp);
	CHECK(w.order[0] == 0 && w.order[1] == 1 && w.order[2] == 3 && w.order[3] == 2 &&
		  w.order[4] == 4, "order %s\n", show(w.order, w.nexp));
	CHECK(l[0].id == 3 && l[1].id == 1 && l[2].id == 0 && l[4].id == 4,
		  "list %u,%u,%u,%u,%u\n", l[0].id, l[1].id, l[2].id, l[3].id, l[4].id);

	/* at most 2 expansions; a list of 2 keeps the closest two met */
	memset(w.seen, 0, sizeof(w.seen));
	w.seen[0] = 1;
	w.nexp = 0;
	n = 0;
	gateann_candidate_insert(l, &n, 2, 0, 5.0f);
	size = gateann_best_first(l, n, 2, 2, line_expand, &w, ids, dists);
	CHECK(w.nexp == 2 && size == 2 && l[0].id == 3 && l[1].id == 1,
		  "limited walk: %d expansions, list %u,%u\n", w.nexp, l[0].id, l[1].id);
}

void
run_search_tests(void)
{
	RUN_CASE("search: a list shorter than the prefix gets the link", case_short_list_appends());
	RUN_CASE("search: an entry in the prefix leaves the list alone", case_in_prefix_unchanged());
	RUN_CASE("search: an entry past the prefix is moved in", case_past_prefix_moved_in());
	RUN_CASE("search: the entry leaving a full prefix has another way in", case_victim_by_indeg());
	RUN_CASE("search: a prefix with room or a spare entry", case_prefix_has_spare());
	RUN_CASE("search: breadth-first walk, refused nodes, prefixes", case_reach());
	RUN_CASE("search: candidate list order, ties, a full list", case_candidate_insert());
	RUN_CASE("search: a batch merge equals inserting one by one; drops", case_candidate_merge());
	RUN_CASE("search: best-first walk order, scan point, expansion limit", case_best_first());
}
