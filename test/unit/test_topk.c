/*
 * test_topk.c — the k best scored ids, in order (src/topk.c), which
 * pre-filtering hands out in batches: checked against a full sort on
 * random inputs with many equal distances, and the edge cases of k.
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
}
