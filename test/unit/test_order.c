/*
 * test_order.c — the locality order of node ids (src/order.c): in-place row
 * permutation, and the cluster-by-cluster numbering itself.
 */
#include "test_common.h"
#include "distance.h"
#include "order.h"
#include "pq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* row i after gateann_permute_rows must be the old row order[i] */
static void
check_permutation(const uint32_t *order, uint32_t n, const char *what)
{
	const size_t rb = 3 * sizeof(uint32_t);
	uint32_t   *rows = malloc(rb * n);
	uint8_t    *done = calloc((n + 7) / 8, 1);
	char		tmp[3 * sizeof(uint32_t)];
	uint32_t	i;

	for (i = 0; i < n; i++)
	{
		rows[3 * i] = i;
		rows[3 * i + 1] = i * 7u + 1;
		rows[3 * i + 2] = ~i;
	}
	gateann_permute_rows((char *) rows, rb, n, order, done, tmp);
	for (i = 0; i < n; i++)
	{
		uint32_t	o = order[i];

		CHECK(rows[3 * i] == o && rows[3 * i + 1] == o * 7u + 1 && rows[3 * i + 2] == ~o,
			  "%s: row %u holds %u, expected %u", what, i, rows[3 * i], o);
	}
	free(rows);
	free(done);
}

static void
test_permute_rows(void)
{
	enum
	{
		N = 1000
	};
	uint32_t	order[N];
	TestRng		rng = {42};
	uint32_t	i;

	for (i = 0; i < N; i++)
		order[i] = i;
	check_permutation(order, N, "identity");
	for (i = 0; i < N; i++)
		order[i] = (i + 1) % N; /* one cycle through every row */
	check_permutation(order, N, "rotation");
	for (i = 0; i < N; i++)
		order[i] = i;
	for (i = N - 1; i > 0; i--)
	{
		uint32_t	j = (uint32_t) (trng_next(&rng) % (i + 1));
		uint32_t	t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	check_permutation(order, N, "random");
	order[0] = 0;
	check_permutation(order, 1, "one row");
}

/* how many of 0..n-1 order misses or repeats (0: a permutation) */
static uint32_t
ids_missing(const uint32_t *order, uint32_t n)
{
	uint8_t    *seen = calloc(n, 1);
	uint32_t	missing = 0;
	uint32_t	i;

	for (i = 0; i < n; i++)
	{
		if (order[i] < n && seen[order[i]] < 2)
			seen[order[i]]++;
	}
	for (i = 0; i < n; i++)
		missing += seen[i] != 1;
	free(seen);
	return missing;
}

/* Euclidean distance, with the reference kernel */
static double
l2(const float *a, const float *b, int d)
{
	return sqrt(gateann_l2sq_scalar(a, b, d));
}

/*
 * The first level the build gives gateann_locality_order: the coarse
 * quantizer of a PQ codebook trained on the first nsample rows (m = 1),
 * and each vector's group from its code.  *book is the codebook block
 * (coarse centroids inside it); *groups n bytes.
 */
static void
coarse_groups(const float *x, uint32_t n, int dims, int nsample, uint64_t seed,
			  GateannPQ *pq, float **book, uint8_t **groups)
{
	float	   *copy = malloc(sizeof(float) * (size_t) dims * nsample);
	void	   *scratch = malloc(gateann_pq_train_scratch_bytes(nsample, dims, 1));
	uint8_t		code[1 + GATEANN_PQ_CODE_EXTRA];
	float	   *work = malloc(sizeof(float) * dims);
	uint32_t	i;

	*book = malloc(gateann_pq_codebook_bytes(dims));
	*groups = malloc(n);
	gateann_pq_attach(pq, dims, 1, *book);
	memcpy(copy, x, sizeof(float) * (size_t) dims * nsample);
	gateann_pq_train(pq, copy, nsample, seed, 10, scratch, NULL);
	for (i = 0; i < n; i++)
	{
		gateann_pq_encode(pq, x + (size_t) i * dims, code, work, NULL);
		(*groups)[i] = (uint8_t) gateann_pq_code_group(code, 1);
	}
	free(copy);
	free(scratch);
	free(work);
}

/*
 * 40 well-separated clusters whose points arrive interleaved at random: in
 * the new order, consecutive nodes must mostly be from the same cluster,
 * every k-means group must keep the old order (so the order is at most 256
 * increasing runs), and the result must be a deterministic permutation.
 */
static void
test_locality_order(void)
{
	const int	dims = 16;
	const uint32_t n = 6000;
	const int	nclusters = 40;
	float	   *centres = malloc(sizeof(float) * dims * nclusters);
	float	   *x = malloc(sizeof(float) * dims * n);
	uint32_t   *order = malloc(sizeof(uint32_t) * n);
	uint32_t   *again = malloc(sizeof(uint32_t) * n);
	void	   *scratch = malloc(gateann_locality_order_scratch_bytes(n, dims));
	GateannPQ	pq;
	float	   *book;
	uint8_t    *groups;
	TestRng		rng = {7};
	double		before = 0,
				after = 0;
	uint32_t	i;
	int			descents = 0;

	trng_fill(&rng, centres, (size_t) dims * nclusters, 100.0f);
	for (i = 0; i < n; i++)
	{
		int			c = (int) (trng_next(&rng) % nclusters);
		int			d;

		for (d = 0; d < dims; d++)
			x[(size_t) i * dims + d] = centres[c * dims + d] + trng_float(&rng);
	}
	coarse_groups(x, n, dims, (int) n, 1, &pq, &book, &groups);
	gateann_locality_order(x, n, dims, pq.coarse, groups, 1, 1, order, scratch, NULL);
	gateann_locality_order(x, n, dims, pq.coarse, groups, 1, 1, again, scratch, NULL);
	CHECK(memcmp(order, again, sizeof(uint32_t) * n) == 0, "same input, different order");

	CHECK(ids_missing(order, n) == 0, "not a permutation: %u ids missing or repeated",
		  ids_missing(order, n));

	for (i = 0; i + 1 < n; i++)
	{
		before += l2(x + (size_t) i * dims, x + (size_t) (i + 1) * dims, dims);
		after += l2(x + (size_t) order[i] * dims, x + (size_t) order[i + 1] * dims, dims);
		descents += order[i + 1] < order[i];
	}
	CHECK(after < before / 10, "consecutive nodes %.1f apart on average, %.1f before",
		  after / (n - 1), before / (n - 1));
	CHECK(descents < 256, "%d increasing runs: groups did not keep the old order",
		  descents + 1);

	free(centres);
	free(x);
	free(order);
	free(again);
	free(scratch);
	free(book);
	free(groups);
}

/*
 * Enough points that first-level groups (about 550 here) are split again:
 * uniform points in the unit 4-cube, cells of about 0.25 after the first
 * level, 0.06 after the second.  Consecutive nodes closer than 0.1: 44 %
 * with both levels, 7 % with the first only.
 */
static void
test_two_levels(void)
{
	const int	dims = 4;
	const uint32_t n = 140000;
	const int	nsample = 32768;
	float	   *x = malloc(sizeof(float) * dims * n);
	uint32_t   *order = malloc(sizeof(uint32_t) * n);
	void	   *scratch = malloc(gateann_locality_order_scratch_bytes(n, dims));
	GateannPQ	pq;
	float	   *book;
	uint8_t    *groups;
	TestRng		rng = {11};
	uint32_t	near = 0;
	uint32_t	i;

	for (i = 0; i < (uint32_t) dims * n; i++)
		x[i] = (trng_float(&rng) + 1.0f) / 2.0f;
	/* the first nsample rows are a fair sample of uniform data */
	coarse_groups(x, n, dims, nsample, 3, &pq, &book, &groups);
	gateann_locality_order(x, n, dims, pq.coarse, groups, 1, 3, order, scratch, NULL);
	CHECK(ids_missing(order, n) == 0, "not a permutation: %u ids missing or repeated",
		  ids_missing(order, n));
	for (i = 0; i + 1 < n; i++)
		near += l2(x + (size_t) order[i] * dims, x + (size_t) order[i + 1] * dims, dims) < 0.1;
	printf("    # %.3f of consecutive nodes closer than 0.1\n", (double) near / (n - 1));
	CHECK(near > (n - 1) / 4, "%.3f of consecutive nodes closer than 0.1",
		  (double) near / (n - 1));

	/*
	 * In parts, as a parallel build orders (parallel_vectors.c): the first
	 * level, then the groups split last to first in scratch sized for the
	 * largest: the same order.
	 */
	{
		uint32_t   *parts = malloc(sizeof(uint32_t) * n);
		uint8_t    *label = malloc(n);
		uint32_t   *tmp = malloc(sizeof(uint32_t) * n);
		uint32_t	top[GATEANN_ORDER_GROUPS + 1];
		uint32_t	largest = 0;
		void	   *split;
		int			g;

		gateann_locality_first_level(pq.coarse, dims, groups, 1, n, parts, label, tmp, top);
		for (g = 0; g < GATEANN_ORDER_GROUPS; g++)
			largest = top[g + 1] - top[g] > largest ? top[g + 1] - top[g] : largest;
		CHECK(largest >= 512, "no group is split (largest %u)", largest);
		split = malloc(gateann_locality_split_scratch_bytes(largest, dims));
		for (g = GATEANN_ORDER_GROUPS - 1; g >= 0; g--)
			gateann_locality_split_group(x, dims, parts + top[g], top[g + 1] - top[g], 3, g,
										 split, NULL);
		CHECK(memcmp(order, parts, sizeof(uint32_t) * n) == 0,
			  "ordered in parts: not the order gateann_locality_order gives");
		free(parts);
		free(label);
		free(tmp);
		free(split);
	}
	free(x);
	free(order);
	free(scratch);
	free(book);
	free(groups);
}

void
run_order_tests(void)
{
	RUN_CASE("order: permute rows in place", test_permute_rows());
	RUN_CASE("order: cluster-by-cluster numbering", test_locality_order());
	RUN_CASE("order: large groups split again", test_two_levels());
}
