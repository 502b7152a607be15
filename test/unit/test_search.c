/*
 * test_search.c — the one best-first walk of build, insert and VACUUM
 * (src/search.c): list order, the scan point moving back to a closer
 * insertion, the expansion limit, the batch merge.
 */
#include "test_common.h"
#include "search.h"

#include <string.h>

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
	size = gateann_best_first(l, n, 8, -1, line_expand, NULL, &w, ids, dists);
	CHECK(size == 5 && w.nexp == 5, "size %d, %d expansions\n", size, w.nexp);
	CHECK(w.order[0] == 0 && w.order[1] == 1 && w.order[2] == 3 && w.order[3] == 2 &&
		  w.order[4] == 4, "order %s\n", test_show_ids(w.order, w.nexp));
	CHECK(l[0].id == 3 && l[1].id == 1 && l[2].id == 0 && l[4].id == 4,
		  "list %u,%u,%u,%u,%u\n", l[0].id, l[1].id, l[2].id, l[3].id, l[4].id);

	/* at most 2 expansions; a list of 2 keeps the closest two met */
	memset(w.seen, 0, sizeof(w.seen));
	w.seen[0] = 1;
	w.nexp = 0;
	n = 0;
	gateann_candidate_insert(l, &n, 2, 0, 5.0f);
	size = gateann_best_first(l, n, 2, 2, line_expand, NULL, &w, ids, dists);
	CHECK(w.nexp == 2 && size == 2 && l[0].id == 3 && l[1].id == 1,
		  "limited walk: %d expansions, list %u,%u\n", w.nexp, l[0].id, l[1].id);
}

/*
 * A random graph whose nodes have more neighbors than one merge batch takes
 * and distances on a coarse grid (ties): the walk, which merges each
 * expansion as a sorted batch, expands the same nodes in the same order and
 * ends with the same list as a walk inserting neighbors one by one.
 */
#define RG_NODES	300
#define RG_DEGREE	200

typedef struct RandomWalk
{
	uint16_t	adj[RG_NODES][RG_DEGREE];
	int			deg[RG_NODES];
	float		dist[RG_NODES];
	uint8_t		seen[RG_NODES];
	uint32_t	order[RG_NODES];
	int			nexp;
} RandomWalk;

static int
random_expand(void *arg, uint32_t id, float dist, uint32_t *ids, float *dists)
{
	RandomWalk *w = arg;
	int			i,
				n = 0;

	(void) dist;
	w->order[w->nexp++] = id;
	for (i = 0; i < w->deg[id]; i++)
	{
		uint32_t	nb = w->adj[id][i];

		if (w->seen[nb])
			continue;
		w->seen[nb] = 1;
		ids[n] = nb;
		dists[n++] = w->dist[nb];
	}
	return n;
}

/* The walk as it was before batches: one insertion per neighbor */
static int
walk_one_by_one(GateannCandidate *list, int size, int L, RandomWalk *w, uint32_t *ids,
				float *dists)
{
	int			first = 0;

	for (;;)
	{
		int			n,
					i;

		while (first < size && list[first].expanded)
			first++;
		if (first >= size)
			break;
		list[first].expanded = 1;
		n = random_expand(w, list[first].id, list[first].dist, ids, dists);
		for (i = 0; i < n; i++)
		{
			int			pos = gateann_candidate_insert(list, &size, L, ids[i], dists[i]);

			if (pos >= 0 && pos < first)
				first = pos;
		}
	}
	return size;
}

static void
case_best_first_batches(void)
{
	static RandomWalk w,
				ref;
	TestRng		rng = {777};
	int			round;

	for (round = 0; round < 200; round++)
	{
		GateannCandidate l[64],
					lref[64];
		uint32_t	ids[RG_DEGREE];
		float		dists[RG_DEGREE];
		int			L = 1 + (int) (trng_next(&rng) % 60);
		int			n = 0,
					nref = 0,
					size,
					sref,
					i,
					j;

		memset(&w, 0, sizeof(w));
		for (i = 0; i < RG_NODES; i++)
		{
			w.dist[i] = (float) (trng_next(&rng) % 20);
			w.deg[i] = (int) (trng_next(&rng) % (RG_DEGREE + 1));
			for (j = 0; j < w.deg[i]; j++)
				w.adj[i][j] = (uint16_t) (trng_next(&rng) % RG_NODES);
		}
		ref = w;
		w.seen[0] = ref.seen[0] = 1;
		gateann_candidate_insert(l, &n, L, 0, w.dist[0]);
		gateann_candidate_insert(lref, &nref, L, 0, w.dist[0]);
		size = gateann_best_first(l, n, L, -1, random_expand, NULL, &w, ids, dists);
		sref = walk_one_by_one(lref, nref, L, &ref, ids, dists);
		CHECK(size == sref && w.nexp == ref.nexp,
			  "round %d: list %d / %d, %d / %d expansions\n", round, size, sref, w.nexp, ref.nexp);
		for (i = 0; i < w.nexp && i < ref.nexp; i++)
			CHECK(w.order[i] == ref.order[i], "round %d: expansion %d is %u, one by one %u\n",
				  round, i, w.order[i], ref.order[i]);
		for (i = 0; i < size && i < sref; i++)
			CHECK(l[i].id == lref[i].id, "round %d: entry %d is %u, one by one %u\n",
				  round, i, l[i].id, lref[i].id);
	}
}

void
run_search_tests(void)
{
	RUN_CASE("search: candidate list order, ties, a full list", case_candidate_insert());
	RUN_CASE("search: a batch merge equals inserting one by one; drops", case_candidate_merge());
	RUN_CASE("search: best-first walk order, scan point, expansion limit", case_best_first());
	RUN_CASE("search: a walk merging expansions in batches equals one by one",
			 case_best_first_batches());
}
