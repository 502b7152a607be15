/*
 * test_distance.c — every implementation of every distance.h kernel against
 * a double-precision reference and against the scalar kernel.
 */
#include "test_common.h"
#include "distance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define K 256

static const char *const impls[] = {"scalar", "avx2", "avx512"};

static double
ref_l2sq(const float *a, const float *b, int n, double *abssum)
{
	double		s = 0.0;
	int			i;

	for (i = 0; i < n; i++)
	{
		double		d = (double) a[i] - (double) b[i];

		s += d * d;
	}
	*abssum = s;
	return s;
}

static double
ref_dot(const float *a, const float *b, int n, double *abssum)
{
	double		s = 0.0,
				as = 0.0;
	int			i;

	for (i = 0; i < n; i++)
	{
		s += (double) a[i] * b[i];
		as += fabs((double) a[i] * b[i]);
	}
	*abssum = as;
	return s;
}

static int
close_enough(double got, double ref, double abssum, int n)
{
	/* float accumulation: allow ~ a few ulps per sqrt(term) plus slack */
	double		tol = (n <= 300 ? 1e-5 : 1e-4) * abssum + 1e-30;

	return fabs(got - ref) <= tol;
}

static const int big_dims[] = {1000, 1024, 4099, 16000};

/*
 * The 8-bit code kernel: sum((qt - step * code)^2) against a double
 * reference, over dimensions around the 16-wide body's edges and unaligned
 * arrays; a code equal to the vector gives (about) zero.
 */
static void
test_sq8_kernel(const GateannDistanceKernels *k)
{
	TestRng		r = {4242};
	float	   *qt = malloc(sizeof(float) * 1001);
	float	   *step = malloc(sizeof(float) * 1001);
	uint8_t    *code = malloc(1001);
	int			dims,
				off,
				i;

	for (off = 0; off < 2; off++)
		for (dims = 1; dims <= 1000; dims += (dims < 70 ? 1 : 37))
		{
			double		ref = 0.0,
						abssum;
			float		got;

			trng_fill(&r, qt, dims + 1, 300.0f);
			trng_fill(&r, step, dims + 1, 2.0f);
			for (i = 0; i < dims + 1; i++)
			{
				code[i] = (uint8_t) (trng_next(&r) & 0xff);
				step[i] = fabsf(step[i]);
			}
			for (i = 0; i < dims; i++)
			{
				double		d = (double) qt[off + i] - (double) step[off + i] * code[off + i];

				ref += d * d;
			}
			abssum = ref;
			got = k->l2sq_sq8(qt + off, code + off, step + off, dims);
			CHECK(close_enough(got, ref, abssum, dims),
				  "dims %d: got %.9g ref %.9g", dims, got, ref);
			abssum = 0.0;
			for (i = 0; i < dims + 1; i++)
			{
				qt[i] = step[i] * code[i];
				abssum += (double) qt[i] * qt[i];
			}
			/* zero but for the rounding of step * code (exact under FMA) */
			got = k->l2sq_sq8(qt + off, code + off, step + off, dims);
			CHECK(got <= 1e-12 * abssum, "dims %d: a code equal to its vector: %.9g", dims, got);
		}
	free(qt);
	free(step);
	free(code);
}

static void
test_vec_kernel(const GateannDistanceKernels *k, int is_dot)
{
	TestRng		r = {12345};
	float	   *a = malloc(sizeof(float) * 16001);
	float	   *b = malloc(sizeof(float) * 16001);
	int			d,
				bi,
				off;

	for (off = 0; off < 2; off++)
	{
		/* off = 1 exercises unaligned pointers */
		for (d = 1; d <= 300 + 4; d++)
		{
			int			dims = d <= 300 ? d : big_dims[d - 301];
			double		abssum,
						ref;
			float		got,
						sc;

			trng_fill(&r, a, dims + 1, 3.0f);
			trng_fill(&r, b, dims + 1, 3.0f);
			if (is_dot)
			{
				ref = ref_dot(a + off, b + off, dims, &abssum);
				got = k->dot(a + off, b + off, dims);
				sc = gateann_dot_scalar(a + off, b + off, dims);
			}
			else
			{
				ref = ref_l2sq(a + off, b + off, dims, &abssum);
				got = k->l2sq(a + off, b + off, dims);
				sc = gateann_l2sq_scalar(a + off, b + off, dims);
			}
			CHECK(close_enough(got, ref, abssum, dims),
				  "dims %d: got %.9g ref %.9g", dims, got, ref);
			CHECK(close_enough(got, sc, abssum, dims),
				  "dims %d: got %.9g scalar %.9g", dims, got, sc);
		}
	}
	/* identical vectors give exactly zero distance */
	for (bi = 1; bi <= 40; bi++)
	{
		if (!is_dot)
			CHECK(k->l2sq(a, a, bi) == 0.0f, "l2sq(a,a) != 0 at %d", bi);
	}
	free(a);
	free(b);
}

/*
 * The SQL operators' double sums: within a few double ulps per term of a
 * long-double sequential sum, at dimensions around the 16-term body's
 * edges and unaligned; dot products and norms equal to the scalar
 * variant's bit for bit (distance.h); a zero vector's norm exactly 0.
 */
static void
test_double_sums(const GateannDistanceKernels *k)
{
	TestRng		r = {777};
	GateannDistanceKernels sc;
	float	   *a = malloc(sizeof(float) * 2001);
	float	   *b = malloc(sizeof(float) * 2001);
	int			dims,
				off,
				i;

	gateann_distance_kernels("scalar", &sc);
	for (off = 0; off < 2; off++)
		for (dims = 0; dims <= 2000; dims += (dims < 70 ? 1 : 97))
		{
			long double l2 = 0,
						ab = 0,
						aa = 0,
						bb = 0;
			double		sums[3],
						scs[3],
						tol = 1e-14 * (dims + 1);

			trng_fill(&r, a, dims + 1, 5.0f);
			trng_fill(&r, b, dims + 1, 5.0f);
			for (i = off; i < off + dims; i++)
			{
				long double d = (long double) a[i] - b[i];

				l2 += d * d;
				ab += (long double) a[i] * b[i];
				aa += (long double) a[i] * a[i];
				bb += (long double) b[i] * b[i];
			}
			CHECK(fabs(k->l2sq_double(a + off, b + off, dims) - (double) l2) <= tol * (double) l2 + 1e-300,
				  "dims %d: l2 %.17g ref %.17Lg", dims, k->l2sq_double(a + off, b + off, dims), l2);
			CHECK(fabs(k->dot_double(a + off, b + off, dims) - (double) ab) <= tol * sqrt((double) (aa * bb)) + 1e-300,
				  "dims %d: dot %.17g ref %.17Lg", dims, k->dot_double(a + off, b + off, dims), ab);
			k->cosine_sums(a + off, b + off, dims, sums);
			sc.cosine_sums(a + off, b + off, dims, scs);
			CHECK(sums[0] == scs[0] && sums[1] == scs[1] && sums[2] == scs[2],
				  "dims %d: cosine sums differ from the scalar variant's", dims);
			CHECK(k->dot_double(a + off, b + off, dims) == sc.dot_double(a + off, b + off, dims),
				  "dims %d: dot differs from the scalar variant's", dims);
			CHECK(sums[0] == k->dot_double(a + off, b + off, dims),
				  "dims %d: cosine's dot is not the dot", dims);
			CHECK(fabs(sums[1] - (double) aa) <= tol * (double) aa + 1e-300, "dims %d: |a|^2", dims);
			memset(b, 0, sizeof(float) * (dims + 1));
			k->cosine_sums(a + off, b + off, dims, sums);
			CHECK(sums[2] == 0.0 && sums[0] == 0.0, "dims %d: a zero vector", dims);
		}
	free(a);
	free(b);
}

static void
test_adc(const GateannDistanceKernels *k)
{
	TestRng		r = {777};
	float	   *table = malloc(sizeof(float) * 1024 * K);
	uint8_t		code[1024];
	int			m,
				i,
				rep;

	trng_fill(&r, table, (size_t) 1024 * K, 10.0f);
	for (m = 1; m <= 1024; m = (m < 140 ? m + 1 : m * 2))
	{
		for (rep = 0; rep < 3; rep++)
		{
			double		ref = 0.0,
						abssum = 0.0;
			float		got,
						sc;

			for (i = 0; i < m; i++)
			{
				code[i] = (uint8_t) (trng_next(&r) & 255);
				if (rep == 1)
					code[i] = 255;	/* extreme indices */
				if (rep == 2 && i % 2)
					code[i] = 0;
				ref += table[(size_t) i * K + code[i]];
				abssum += fabs(table[(size_t) i * K + code[i]]);
			}
			got = k->pq_adc(table, code, m);
			sc = gateann_pq_adc_scalar(table, code, m);
			CHECK(fabs(got - ref) <= 1e-5 * abssum + 1e-30, "m %d: got %.9g ref %.9g", m, got, ref);
			CHECK(fabs(got - sc) <= 1e-5 * abssum + 1e-30, "m %d: got %.9g scalar %.9g", m, got, sc);
		}
	}
	free(table);
}

static const int pq_widths[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16,
17, 20, 24, 31, 32, 33, 48, 64, 100, 200};

static void
test_pq_kernels(const GateannDistanceKernels *k)
{
	TestRng		r = {4242};
	float	   *cent = malloc(sizeof(float) * 201 * K);
	float		x[201];
	float		l2[K],
				ip[K];
	size_t		wi;
	int			rep;

	for (wi = 0; wi < sizeof(pq_widths) / sizeof(pq_widths[0]); wi++)
	{
		int			w = pq_widths[wi];

		for (rep = 0; rep < 4; rep++)
		{
			double		bestref = INFINITY;
			int			c,
						got;
			float		gotd;
			int			off = rep & 1;	/* unaligned */

			trng_fill(&r, cent, (size_t) w * K + 1, 2.0f);
			trng_fill(&r, x, w + 1, 2.0f);
			if (rep == 3)
			{
				/* duplicate centroids: ties must go to the lowest index */
				for (c = 128; c < K; c++)
					memcpy(cent + off + (size_t) c * w, cent + off + (size_t) (c - 128) * w,
						   w * sizeof(float));
			}
			k->pq_l2_table(cent + off, x + off, w, l2);
			k->pq_ip_table(cent + off, x + off, w, ip);
			for (c = 0; c < K; c++)
			{
				double		abssum,
							rl2 = ref_l2sq(cent + off + (size_t) c * w, x + off, w, &abssum),
							rip;

				CHECK(close_enough(l2[c], rl2, abssum, w), "w %d c %d: l2 %.9g ref %.9g", w, c, l2[c], rl2);
				rip = -ref_dot(cent + off + (size_t) c * w, x + off, w, &abssum);
				CHECK(close_enough(ip[c], rip, abssum, w), "w %d c %d: ip %.9g ref %.9g", w, c, ip[c], rip);
				if (rl2 < bestref)
					bestref = rl2;
			}
			got = k->pq_nearest(cent + off, x + off, w, &gotd);
			CHECK(got >= 0 && got < K, "w %d: nearest out of range %d", w, got);
			if (got >= 0 && got < K)
			{
				double		abssum,
							rg = ref_l2sq(cent + off + (size_t) got * w, x + off, w, &abssum);

				CHECK(rg <= bestref * (1 + 1e-5) + 1e-30, "w %d: nearest %d dist %.9g best %.9g", w, got, rg, bestref);
				CHECK(close_enough(gotd, rg, abssum, w), "w %d: returned dist %.9g ref %.9g", w, gotd, rg);
				CHECK(got == k->pq_nearest(cent + off, x + off, w, NULL), "w %d: NULL dist changes result", w);
				if (rep == 3)
					CHECK(got < 128, "w %d: tie not broken to lowest index (%d)", w, got);
			}
		}
	}
	/* x equal to a centroid: that centroid, distance 0 */
	{
		int			w = 4;
		float		d;

		trng_fill(&r, cent, (size_t) w * K, 2.0f);
		CHECK(k->pq_nearest(cent, cent + 77 * w, w, &d) == 77 && d == 0.0f, "exact match not found");
	}
	free(cent);
}

static void
test_dispatch(void)
{
	GateannDistanceKernels k;

	setenv("GATEANN_FORCE_SCALAR", "1", 1);
	gateann_distance_init();
	CHECK(strcmp(gateann_distance_impl(), "scalar") == 0, "forced scalar gave %s", gateann_distance_impl());
	CHECK(gateann_l2sq == gateann_l2sq_scalar && gateann_pq_nearest == gateann_pq_nearest_scalar,
		  "forced scalar pointers");
	unsetenv("GATEANN_FORCE_SCALAR");
	gateann_distance_init();
	gateann_distance_init();	/* idempotent */
	if (gateann_distance_kernels("avx512", &k))
		CHECK(strcmp(gateann_distance_impl(), "avx512") == 0, "init chose %s on an avx512 CPU", gateann_distance_impl());
	else if (gateann_distance_kernels("avx2", &k))
		CHECK(strcmp(gateann_distance_impl(), "avx2") == 0, "init chose %s on an avx2 CPU", gateann_distance_impl());
	else
		CHECK(strcmp(gateann_distance_impl(), "scalar") == 0, "init chose %s", gateann_distance_impl());
#if defined(__x86_64__) || defined(__i386__)
	/* the scalar ADC on AMD's cores (their gathers are slower), else the set's own */
	__builtin_cpu_init();
	if (strcmp(gateann_distance_impl(), "scalar") != 0)
		CHECK((gateann_pq_adc == gateann_pq_adc_scalar) == (__builtin_cpu_is("amd") != 0),
			  "%s CPU: init chose the %s ADC", __builtin_cpu_is("amd") ? "AMD" : "non-AMD",
			  gateann_pq_adc == gateann_pq_adc_scalar ? "scalar" : "gather");
#endif
	CHECK(gateann_distance_kernels("nonsense", &k) == 0, "unknown impl accepted");
}

void
run_distance_tests(void)
{
	size_t		i;
	char		name[128];

	for (i = 0; i < sizeof(impls) / sizeof(impls[0]); i++)
	{
		GateannDistanceKernels k;

		if (!gateann_distance_kernels(impls[i], &k))
		{
			printf("# %s not available on this CPU, skipped\n", impls[i]);
			continue;
		}
		snprintf(name, sizeof(name), "%s l2sq vs reference, dims 1..300 + large", impls[i]);
		RUN_CASE(name, test_vec_kernel(&k, 0));
		snprintf(name, sizeof(name), "%s dot vs reference, dims 1..300 + large", impls[i]);
		RUN_CASE(name, test_vec_kernel(&k, 1));
		snprintf(name, sizeof(name), "%s l2sq_sq8 vs reference, dims 1..1000", impls[i]);
		RUN_CASE(name, test_sq8_kernel(&k));
		snprintf(name, sizeof(name), "%s double sums vs reference, dims 0..2000", impls[i]);
		RUN_CASE(name, test_double_sums(&k));
		snprintf(name, sizeof(name), "%s pq_adc vs reference, m 1..1024", impls[i]);
		RUN_CASE(name, test_adc(&k));
		snprintf(name, sizeof(name), "%s pq_nearest / l2_table / ip_table", impls[i]);
		RUN_CASE(name, test_pq_kernels(&k));
	}
	RUN_CASE("dispatch: init, GATEANN_FORCE_SCALAR, idempotence", test_dispatch());
}
