/*
 * bench.c — micro benchmark for the distance kernels and PQ (not a test).
 */
#include "distance.h"
#include "pq.h"
#include "test_common.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int			tests_passed,
			tests_failed,
			case_failed;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);	/* CPU time: the host is shared */
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile float sink;

/* best of 7 runs of `body` executed n times; ns per execution */
#define BEST_NS(result, n, body) \
	do { \
		int			rep_, it_; \
		double		best_ = 1e30; \
		for (rep_ = 0; rep_ < 7; rep_++) \
		{ \
			double		t_ = now(); \
			for (it_ = 0; it_ < (n); it_++) \
			{ \
				i = it_; \
				body; \
			} \
			t_ = now() - t_; \
			if (t_ < best_) \
				best_ = t_; \
		} \
		(result) = best_ / (n) * 1e9; \
	} while (0)

#define NVEC 4096				/* vectors cycled through (1 MB at 64 dims) */

static void
bench_impl(const char *impl)
{
	GateannDistanceKernels k;
	TestRng		r = {1};
	float	   *a,
			   *table,
			   *cent;
	uint8_t    *codes;
	int			iters = 1000000;
	int			i,
				dims = 128;
	double		t;
	float		acc = 0.0f;
	float		tbl[256];

	if (!gateann_distance_kernels(impl, &k))
	{
		printf("%-14s not available\n", impl);
		return;
	}
	a = malloc(sizeof(float) * (NVEC + 1) * dims);
	trng_fill(&r, a, (size_t) (NVEC + 1) * dims, 1.0f);

	/* hot: 64 vectors (32 KB) cycled; cold-ish: 4096 vectors (2 MB) */
	BEST_NS(t, iters, acc += k.l2sq(a + (size_t) (i & 63) * dims, a + (size_t) NVEC * dims, dims));
	printf("%-14s l2sq  128d hot  %7.2f ns/op\n", impl, t);
	BEST_NS(t, iters, acc += k.l2sq(a + (size_t) (i & (NVEC - 1)) * dims, a + (size_t) NVEC * dims, dims));
	printf("%-14s l2sq  128d 2MB  %7.2f ns/op\n", impl, t);
	BEST_NS(t, iters, acc += k.dot(a + (size_t) (i & 63) * dims, a + (size_t) NVEC * dims, dims));
	printf("%-14s dot   128d hot  %7.2f ns/op\n", impl, t);
	BEST_NS(t, iters, acc += k.l2sq(a + (size_t) (i & 7) * 768, a + (size_t) 8 * 768, 768));
	printf("%-14s l2sq  768d hot  %7.2f ns/op\n", impl, t);
	{
		/* an 8-bit code of 384 dims against a vector (the build's search) */
		uint8_t    *c8 = malloc((size_t) NVEC * 384);

		for (i = 0; i < NVEC * 384; i++)
			c8[i] = (uint8_t) trng_next(&r);
		BEST_NS(t, iters, acc += k.l2sq_sq8(a, c8 + (size_t) (i & 63) * 384, a + 384, 384));
		printf("%-14s sq8   384d hot  %7.2f ns/op\n", impl, t);
		free(c8);
	}

	table = malloc(sizeof(float) * 96 * 256);
	codes = malloc((size_t) NVEC * 96);
	trng_fill(&r, table, 96 * 256, 1.0f);
	for (i = 0; i < NVEC * 96; i++)
		codes[i] = (uint8_t) trng_next(&r);
	{
		static const int ms[] = {8, 16, 32, 64, 96};
		size_t		mi;

		for (mi = 0; mi < sizeof(ms) / sizeof(ms[0]); mi++)
		{
			int			m = ms[mi];

			BEST_NS(t, iters, acc += k.pq_adc(table, codes + (size_t) (i & (NVEC - 1)) * 96, m));
			printf("%-14s pq_adc m=%-3d    %7.2f ns/op\n", impl, m, t);
		}
	}

	/* widths: the default code's 4, 1536 dims' 6, odd ones, and a coarse quantizer's 128 */
	cent = malloc(sizeof(float) * 256 * 128);
	trng_fill(&r, cent, 256 * 128, 1.0f);
	{
		static const int ws[] = {4, 5, 6, 8, 12, 16, 128};
		size_t		wi;

		for (wi = 0; wi < sizeof(ws) / sizeof(ws[0]); wi++)
		{
			int			w = ws[wi];
			int			n = w > 16 ? 20000 : 100000;

			BEST_NS(t, n, acc += (float) k.pq_nearest(cent, a + (size_t) (i & (NVEC - 1)) * dims, w, NULL));
			printf("%-14s pq_nearest  w=%-3d %8.2f ns/op\n", impl, w, t);
			BEST_NS(t, n, k.pq_l2_table(cent, a + (size_t) (i & (NVEC - 1)) * dims, w, tbl); acc += tbl[i & 255]);
			printf("%-14s pq_l2_table w=%-3d %8.2f ns/op\n", impl, w, t);
			BEST_NS(t, n, k.pq_ip_table(cent, a + (size_t) (i & (NVEC - 1)) * dims, w, tbl); acc += tbl[i & 255]);
			printf("%-14s pq_ip_table w=%-3d %8.2f ns/op\n", impl, w, t);
		}
	}
	sink = acc;
	free(a);
	free(table);
	free(codes);
	free(cent);
}

static void
bench_pq(void)
{
	int			dims = 128,
				m = 32,
				n = 65536,
				nenc = 1000000,
				i;
	TestRng		r = {7};
	float	   *x = malloc(sizeof(float) * (size_t) dims * n);
	void	   *scratch = malloc(gateann_pq_train_scratch_bytes(n, dims, m));
	GateannPQ	pq;
	size_t		cb = gateann_pq_code_bytes(m);
	uint8_t    *codes = malloc((size_t) nenc * cb);
	float	   *tbl = malloc(sizeof(float) * gateann_pq_table_floats(m));
	float	   *work = malloc(sizeof(float) * dims);
	double		t;

	gateann_pq_attach(&pq, dims, m, malloc(gateann_pq_codebook_bytes(dims)));
	/* mildly clustered data so k-means does real work */
	for (i = 0; i < n; i++)
	{
		int			j;
		uint64_t	cl = trng_next(&r) % 1000;

		for (j = 0; j < dims; j++)
			x[(size_t) i * dims + j] = (float) ((cl * 2654435761u + j * 40503u) % 1000) / 500.0f
				+ 0.2f * trng_float(&r);
	}
	t = now();
	gateann_pq_train(&pq, x, n, 1, 12, scratch, NULL);	/* x becomes residuals: fine here */
	t = now() - t;
	printf("[%s] pq_train n=%d dims=%d m=%d iters=12: %.2f s\n",
		   gateann_distance_impl(), n, dims, m, t);

	t = now();
	for (i = 0; i < nenc; i++)
		gateann_pq_encode(&pq, x + (size_t) (i & (n - 1)) * dims, codes + (size_t) i * cb, work,
						  NULL);
	t = now() - t;
	printf("[%s] pq_encode %d x %dd m=%d: %.2f s (%.0f ns/vector)\n",
		   gateann_distance_impl(), nenc, dims, m, t, t / nenc * 1e9);

	t = now();
	for (i = 0; i < 100000; i++)
		gateann_pq_distance_table(&pq, x + (size_t) (i & (n - 1)) * dims,
								  (i & 1) ? GATEANN_PQ_IP : GATEANN_PQ_L2, tbl);
	t = now() - t;
	printf("[%s] pq_distance_table 128d m=32: %.0f ns/query\n",
		   gateann_distance_impl(), t / 100000 * 1e9);

	free(x);
	free(scratch);
	free(pq.centroids);
	free(codes);
	free(tbl);
	free(work);
}

int
main(int argc, char **argv)
{
	static const char *const impls[] = {"scalar", "avx2", "avx512"};
	size_t		i;

	for (i = 0; i < sizeof(impls) / sizeof(impls[0]); i++)
		bench_impl(impls[i]);
	if (argc > 1 && strcmp(argv[1], "--no-pq") == 0)
		return 0;
	gateann_distance_init();
	bench_pq();
	setenv("GATEANN_FORCE_SCALAR", "1", 1);
	gateann_distance_init();
	bench_pq();
	return 0;
}
