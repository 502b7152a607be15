/*
 * test_repair.c — candidates of a list repaired by VACUUM (src/repair.c).
 *
 * The bug this guards against: only the 2R closest candidates were kept, so
 * when the deleted neighbors brought many close replacements, the far
 * neighbors that stayed (the build's long edges) were never candidates, and
 * filtered searches after DELETE + VACUUM lost recall.
 */
#include "test_common.h"
#include "repair.h"

#include <stdbool.h>

#define MAXN 256

static bool
contains(const int *chosen, int n, int x)
{
	int			i;

	for (i = 0; i < n; i++)
		if (chosen[i] == x)
			return true;
	return false;
}

/* far neighbors that stay are kept, whatever the replacements */
static void
case_far_stay_kept(void)
{
	float		dist[MAXN];
	GateannRepairCandidate scratch[MAXN];
	int			chosen[MAXN];
	int			R = 4,
				nstay = 6,
				n = 6 + 40,
				got,
				i;

	for (i = 0; i < nstay; i++)
		dist[i] = 1000.0f + i;	/* far */
	for (i = nstay; i < n; i++)
		dist[i] = (float) ((i * 7) % 40);	/* close, shuffled */
	got = gateann_repair_choose(dist, nstay, n, R, scratch, chosen);
	CHECK(got == nstay + R, "got %d candidates, want %d\n", got, nstay + R);
	for (i = 0; i < nstay; i++)
		CHECK(chosen[i] == i, "position %d holds %d, want neighbor %d that stays\n",
			  i, chosen[i], i);
	/* the R closest replacements, nearest first */
	for (i = nstay; i < got; i++)
		CHECK(dist[chosen[i]] == (float) (i - nstay), "replacement %d at distance %g\n",
			  i - nstay, (double) dist[chosen[i]]);
}

/* few stay: replacements fill up to 2R, nearest first, ties by position */
static void
case_fill_to_2r(void)
{
	float		dist[MAXN];
	GateannRepairCandidate scratch[MAXN];
	int			chosen[MAXN];
	int			R = 8,
				nstay = 1,
				n = 1 + 30,
				got,
				i;

	dist[0] = 5.0f;
	for (i = 1; i < n; i++)
		dist[i] = (float) (i / 2);	/* pairs of equal distances */
	got = gateann_repair_choose(dist, nstay, n, R, scratch, chosen);
	CHECK(got == 2 * R, "got %d candidates, want %d\n", got, 2 * R);
	CHECK(chosen[0] == 0, "the neighbor that stays first\n");
	for (i = 1; i < got; i++)
		CHECK(chosen[i] == i, "position %d holds %d (ties by input order)\n", i, chosen[i]);
	CHECK(!contains(chosen, got, n - 1), "the farthest replacement is not chosen\n");
}

/* fewer candidates than the limit: all of them; no replacements: all that stay */
static void
case_all_fit(void)
{
	float		dist[MAXN] = {3, 1, 2, 9, 0};
	GateannRepairCandidate scratch[MAXN];
	int			chosen[MAXN];
	int			got,
				i;

	got = gateann_repair_choose(dist, 2, 5, 4, scratch, chosen);
	CHECK(got == 5, "got %d, want all 5\n", got);
	CHECK(chosen[0] == 0 && chosen[1] == 1, "the two that stay first\n");
	CHECK(chosen[2] == 4 && chosen[3] == 2 && chosen[4] == 3, "replacements by distance\n");
	got = gateann_repair_choose(dist, 5, 5, 1, scratch, chosen);
	CHECK(got == 5, "no replacements: got %d, want the 5 that stay\n", got);
	for (i = 0; i < got; i++)
		CHECK(chosen[i] == i, "stays in input order\n");
	got = gateann_repair_choose(dist, 0, 0, 4, scratch, chosen);
	CHECK(got == 0, "no candidates: got %d\n", got);
}


void
run_repair_tests(void)
{
	RUN_CASE("repair: far neighbors that stay are candidates", case_far_stay_kept());
	RUN_CASE("repair: replacements fill to 2R, nearest first", case_fill_to_2r());
	RUN_CASE("repair: everything when it fits", case_all_fit());
}
