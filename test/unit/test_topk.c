/*
 * test_topk.c — the k best scored ids, in order (src/topk.c), which
 * pre-filtering hands out in batches: checked against a full sort on
 * random inputs with many equal distances, and the edge cases of k; and
 * the same with a cap on equal distances, against taking a full sort's
 * items in order and passing over those the cap refuses.
 */
#include "test_common.h"
#include "topk.h"

#include <stdlib.h>
#include <string.h>

#define MAXN 5000

static int
full_cmp(const void *a, const void *b)
{
	const GateannScored *x = a;
	const GateannScored *y = b;

	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id ? 1 : 0;
}

/* n random candidates with ids 0..n-1 shuffled; dist from `levels` values */
static void
fill(GateannScored *c, int n, int levels, unsigned *seed)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		c[i].id = (uint32_t) i;
		c[i].dist = (float) (rand_r(seed) % levels) * 0.5f;
	}
	for (i = n - 1; i > 0; i--)
	{
		int			j = rand_r(seed) % (i + 1);
		GateannScored t = c[i];

		c[i] = c[j];
		c[j] = t;
	}
}

/* the first k equal the first k of a full sort, and all n are still there */
static void
case_matches_full_sort(int n, int64_t k, int levels, unsigned seed)
{
	static GateannScored c[MAXN];
	static GateannScored sorted[MAXN];
	static char seen[MAXN];
	int64_t		got;
	int64_t		want = k <= 0 ? 0 : (k < n ? k : n);
	int			i;

	fill(c, n, levels, &seed);
	memcpy(sorted, c, sizeof(GateannScored) * n);
	qsort(sorted, n, sizeof(GateannScored), full_cmp);
	got = gateann_topk_sorted(c, n, k);
	CHECK(got == want, "n=%d k=%lld: returned %lld, want %lld\n", n, (long long) k,
		  (long long) got, (long long) want);
	for (i = 0; i < want && i < got; i++)
		CHECK(c[i].id == sorted[i].id && c[i].dist == sorted[i].dist,
			  "n=%d k=%lld: position %d holds id %u, want %u\n", n, (long long) k, i,
			  c[i].id, sorted[i].id);
	memset(seen, 0, n);
	for (i = 0; i < n; i++)
		seen[c[i].id]++;
	for (i = 0; i < n; i++)
		CHECK(seen[i] == 1, "n=%d k=%lld: id %d appears %d times\n", n, (long long) k, i,
			  seen[i]);
}

/* batches taken one after another come out in one global order */
static void
case_batches(void)
{
	static GateannScored c[MAXN];
	static GateannScored sorted[MAXN];
	unsigned	seed = 7;
	int			n = 3000;
	int			taken = 0;
	int			batch = 10;
	int			i;

	fill(c, n, 40, &seed);
	memcpy(sorted, c, sizeof(GateannScored) * n);
	qsort(sorted, n, sizeof(GateannScored), full_cmp);
	while (taken < n)
	{
		int64_t		got = gateann_topk_sorted(c + taken, n - taken, batch);

		CHECK(got > 0, "no progress at %d\n", taken);
		if (got <= 0)
			return;
		taken += (int) got;
		batch *= 2;
	}
	for (i = 0; i < n; i++)
		CHECK(c[i].id == sorted[i].id, "position %d holds id %u, want %u\n", i, c[i].id,
			  sorted[i].id);
}

/*
 * Capped: c[0..got-1] is a prefix of what the full sort gives, in order,
 * when each item whose distance max_run items already taken have is passed
 * over; all of it when the passes suffice; all n still there.
 */
static void
case_capped(int n, int64_t k, int levels, int max_run, int max_passes, int64_t want_min,
			unsigned seed)
{
	static GateannScored c[MAXN];
	static GateannScored sorted[MAXN];
	static GateannScored expect[MAXN];
	static GateannScored scratch[MAXN];
	static char seen[MAXN];
	int64_t		nexpect = 0;
	int64_t		got;
	int			run = 0;
	int			i;

	fill(c, n, levels, &seed);
	memcpy(sorted, c, sizeof(GateannScored) * n);
	qsort(sorted, n, sizeof(GateannScored), full_cmp);
	for (i = 0; i < n && nexpect < k; i++)
	{
		run = (nexpect > 0 && sorted[i].dist == expect[nexpect - 1].dist) ? run + 1 : 1;
		if (run <= max_run)
			expect[nexpect++] = sorted[i];
		else
			run = max_run;
	}
	got = gateann_topk_sorted_capped(c, n, k, max_run, max_passes, scratch);
	CHECK(got <= nexpect && got >= want_min,
		  "n=%d k=%lld cap=%d: returned %lld, want %lld..%lld\n", n, (long long) k,
		  max_run, (long long) got, (long long) want_min, (long long) nexpect);
	for (i = 0; i < got && i < nexpect; i++)
		CHECK(c[i].id == expect[i].id && c[i].dist == expect[i].dist,
			  "n=%d k=%lld cap=%d: position %d holds id %u, want %u\n", n, (long long) k,
			  max_run, i, c[i].id, expect[i].id);
	memset(seen, 0, n);
	for (i = 0; i < n; i++)
		seen[c[i].id]++;
	for (i = 0; i < n; i++)
		CHECK(seen[i] == 1, "n=%d cap=%d: id %d appears %d times\n", n, max_run, i, seen[i]);
}

void
run_topk_tests(void)
{
	RUN_CASE("topk: k < n, distinct distances", case_matches_full_sort(MAXN, 50, 1 << 30, 1));
	RUN_CASE("topk: k < n, many equal distances (ties by id)",
			 case_matches_full_sort(MAXN, 300, 7, 2));
	RUN_CASE("topk: all equal distances", case_matches_full_sort(1000, 100, 1, 3));
	RUN_CASE("topk: k = 1", case_matches_full_sort(999, 1, 100, 4));
	RUN_CASE("topk: k = n - 1", case_matches_full_sort(500, 499, 50, 5));
	RUN_CASE("topk: k = n", case_matches_full_sort(500, 500, 50, 6));
	RUN_CASE("topk: k > n", case_matches_full_sort(37, 1000, 5, 7));
	RUN_CASE("topk: k = 0", case_matches_full_sort(100, 0, 5, 8));
	RUN_CASE("topk: n = 1", case_matches_full_sort(1, 10, 5, 9));
	RUN_CASE("topk: batches of growing size", case_batches());
	/* 5000 items over 200 distances: runs of about 25, cap 10: four passes fill most of the batch */
	RUN_CASE("topk capped: runs longer than the cap",
			 case_capped(MAXN, 100, 200, 10, 4, 80, 11));
	RUN_CASE("topk capped: passes enough for every run",
			 case_capped(MAXN, 300, 1000, 2, 50, 300, 12));
	RUN_CASE("topk capped: distinct distances, as uncapped",
			 case_capped(MAXN, 77, 1 << 30, 1, 1, 77, 13));
	/* one distance: each pass keeps nothing after the first max_run */
	RUN_CASE("topk capped: one distance only", case_capped(1000, 100, 1, 10, 4, 10, 14));
	RUN_CASE("topk capped: k > n", case_capped(40, 100, 3, 5, 10, 15, 15));
}
