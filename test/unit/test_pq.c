/*
 * test_pq.c — residual product quantization: layout, default subspaces,
 * training, encoding, decoding and distance tables.  Runs against whatever kernels
 * gateann_distance_init() selected (the driver runs it once per variant).
 */
#include "test_common.h"
#include "distance.h"
#include "pq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define K GATEANN_PQ_CENTROIDS

static char prefix[64];

static double
dl2(const float *a, const float *b, int n)
{
	double		s = 0.0;
	int			i;

	for (i = 0; i < n; i++)
		s += ((double) a[i] - b[i]) * ((double) a[i] - b[i]);
	return s;
}

static double
ddot(const float *a, const float *b, int n)
{
	double		s = 0.0;
	int			i;

	for (i = 0; i < n; i++)
		s += (double) a[i] * b[i];
	return s;
}

/*
 * allocate and train a codebook on a copy of the sample (training
 * overwrites it); caller frees pq->centroids (the whole block)
 */
static void
train(GateannPQ *pq, int dims, int m, const float *sample, int n,
	  uint64_t seed, int iters)
{
	void	   *scratch = malloc(gateann_pq_train_scratch_bytes(n, dims, m));
	float	   *copy = malloc(sizeof(float) * (size_t) dims * (n > 0 ? n : 1));
	float	   *book = malloc(gateann_pq_codebook_bytes(dims));

	memcpy(copy, sample, sizeof(float) * (size_t) dims * n);
	memset(book, 0x7f, gateann_pq_codebook_bytes(dims));	/* garbage */
	gateann_pq_attach(pq, dims, m, book);
	gateann_pq_train(pq, copy, n, seed, iters, scratch, NULL);
	free(scratch);
	free(copy);
}

static void
test_layout(void)
{
	int			dims,
				m,
				s;

	for (dims = 1; dims <= 300; dims++)
	{
		for (m = 1; m <= dims && m <= 130; m++)
		{
			int			next = 0;

			for (s = 0; s < m; s++)
			{
				int			off = gateann_pq_sub_offset(dims, m, s);
				int			w = gateann_pq_sub_dims(dims, m, s);

				CHECK(off == next, "dims %d m %d s %d: offset %d expected %d", dims, m, s, off, next);
				CHECK(w == dims / m + (s < dims % m), "dims %d m %d s %d: width %d", dims, m, s, w);
				next = off + w;
			}
			CHECK(next == dims, "dims %d m %d: covers %d", dims, m, next);
		}
	}
	CHECK(gateann_pq_sub_offset(16000, 80, 79) == 15800 && gateann_pq_sub_dims(16000, 80, 79) == 200, "16000/80");
	CHECK(gateann_pq_sub_dims(13, 3, 0) == 5 && gateann_pq_sub_dims(13, 3, 1) == 4 &&
		  gateann_pq_sub_offset(13, 3, 2) == 9, "13/3 uneven split");
	/* residual codebooks and coarse centroids */
	CHECK(gateann_pq_codebook_bytes(128) == 2 * 128 * 256 * sizeof(float), "codebook bytes");
	CHECK(gateann_pq_code_bytes(32) == 37, "code bytes");
	CHECK(gateann_pq_table_floats(32) == 32 * 256 + 257, "table floats");
}

static void
test_default_subspaces(void)
{
	static const int ex[][2] = {
		{1, 1}, {2, 2}, {3, 3}, {4, 4}, {8, 8}, {12, 6}, {13, 8}, {16, 8},
		{20, 5}, {32, 8}, {96, 24}, {100, 25}, {128, 32}, {200, 50}, {256, 64},
		{300, 75}, {384, 96}, {512, 128}, {768, 192}, {960, 240}, {1000, 250},
		{1024, 256}, {1536, 256}, {3072, 256}, {16000, 250}, {97, 24}
	};
	size_t		i;
	int			dims;

	for (i = 0; i < sizeof(ex) / sizeof(ex[0]); i++)
		CHECK(gateann_pq_default_subspaces(ex[i][0]) == ex[i][1], "dims %d: got %d expected %d",
			  ex[i][0], gateann_pq_default_subspaces(ex[i][0]), ex[i][1]);

	/* the rule, checked independently for every dims up to 20000 */
	for (dims = 1; dims <= 20000; dims++)
	{
		int			m = gateann_pq_default_subspaces(dims);
		int			t = dims / 4;
		int			best = 0,
					d;

		if (t < (dims < 8 ? dims : 8))
			t = dims < 8 ? dims : 8;
		if (t > 256)
			t = 256;
		for (d = 1; d <= t; d++)
			if (dims % d == 0 && 2 * d >= t)
				best = d;
		CHECK(m >= 1 && m <= 256 && m <= dims, "dims %d: m %d out of range", dims, m);
		CHECK(m == (best ? best : t), "dims %d: m %d expected %d", dims, m, best ? best : t);
	}
}

static void
test_determinism(void)
{
	int			dims = 40,
				m = 7,
				n = 3000;
	TestRng		r = {99};
	float	   *x = malloc(sizeof(float) * dims * n);
	GateannPQ	a,
				b,
				c;

	trng_fill(&r, x, (size_t) dims * n, 1.0f);
	train(&a, dims, m, x, n, 42, 12);
	train(&b, dims, m, x, n, 42, 12);
	train(&c, dims, m, x, n, 43, 12);
	CHECK(memcmp(a.centroids, b.centroids, gateann_pq_codebook_bytes(dims)) == 0, "same seed differs");
	CHECK(memcmp(a.centroids, c.centroids, gateann_pq_codebook_bytes(dims)) != 0, "different seed identical");
	free(a.centroids);
	free(b.centroids);
	free(c.centroids);
	free(x);
}

/*
 * The parallel build's schedule (pq_parallel.c), played in one process: the
 * coarse iterations' rows assigned in chunks out of order, the residuals in
 * chunks, the subspaces last to first.  It must give gateann_pq_train's
 * bytes, on spread rows and on duplicated ones (empty clusters re-seeded).
 */
static void
train_in_parts(GateannPQ *pq, int dims, int m, const float *sample, int n,
			   uint64_t seed, int iters, int chunk)
{
	float	   *x = malloc(sizeof(float) * (size_t) dims * n);
	int		   *assign = malloc(sizeof(int) * n);
	float	   *dist = malloc(sizeof(float) * n);
	double	   *sums = malloc(sizeof(double) * K * dims);
	int		   *counts = malloc(sizeof(int) * K);
	void	   *scratch = malloc(gateann_pq_subspace_scratch_bytes(n, dims, m));
	float	   *book = malloc(gateann_pq_codebook_bytes(dims));
	uint64_t	rng = gateann_pq_coarse_seed(seed);
	int			nchunks = (n + chunk - 1) / chunk;
	int			it;
	int			c;
	int			s;

	memcpy(x, sample, sizeof(float) * (size_t) dims * n);
	memset(book, 0, gateann_pq_codebook_bytes(dims));
	gateann_pq_attach(pq, dims, m, book);
	gateann_kmeans_start(pq->coarse, K, x, n, dims, &rng, assign, counts);
	for (it = 0; it < iters; it++)
	{
		int			changed = 0;

		/* chunks visited with a stride prime to their count */
		for (c = 0; c < nchunks; c++)
		{
			int			from = ((c * 7 + 3) % nchunks) * chunk;
			int			to = from + chunk < n ? from + chunk : n;

			changed += gateann_kmeans_assign(pq->coarse, K, x, dims, from, to, assign, dist);
		}
		if (changed == 0)
			break;
		gateann_kmeans_update(pq->coarse, K, x, n, dims, assign, dist, sums, counts);
	}
	for (c = nchunks - 1; c >= 0; c--)
		gateann_pq_residuals(pq, x, c * chunk, (c + 1) * chunk < n ? (c + 1) * chunk : n);
	for (s = m - 1; s >= 0; s--)
		gateann_pq_train_subspace(pq, x, n, seed, iters, s, scratch, NULL);
	free(x);
	free(assign);
	free(dist);
	free(sums);
	free(counts);
	free(scratch);
}

static void
test_train_in_parts(void)
{
	int			dims = 24,
				m = 5,
				n = 2600;
	TestRng		r = {7};
	float	   *x = malloc(sizeof(float) * dims * n);
	int			round;

	trng_fill(&r, x, (size_t) dims * n, 1.0f);
	for (round = 0; round < 2; round++)
	{
		GateannPQ	whole,
					parts;

		if (round == 1)			/* 300 distinct rows, each about 9 times */
		{
			int			i;

			for (i = 300; i < n; i++)
				memcpy(x + (size_t) i * dims, x + (size_t) (i % 300) * dims,
					   sizeof(float) * dims);
		}
		train(&whole, dims, m, x, n, 42, 12);
		train_in_parts(&parts, dims, m, x, n, 42, 12, 1000);
		CHECK(memcmp(whole.centroids, parts.centroids, gateann_pq_codebook_bytes(dims)) == 0,
			  "round %d: trained in parts, the codebook differs", round);
		free(whole.centroids);
		free(parts.centroids);
	}
	free(x);
}

/* n < 256: coarse centroid c is row c % n, so every row codes exactly */
static void
test_small_n(void)
{
	int			dims = 13,
				m = 3,
				n,
				c,
				i;
	TestRng		r = {5};
	float		x[13 * 255];
	float		work[13],
				out[13];
	uint8_t		code[3 + GATEANN_PQ_CODE_EXTRA];
	GateannPQ	pq;

	trng_fill(&r, x, sizeof(x) / sizeof(x[0]), 1.0f);
	for (n = 0; n <= 255; n += (n < 3 ? 1 : 84))
	{
		train(&pq, dims, m, x, n, 1, 12);
		for (c = 0; c < K; c++)
		{
			int			j;

			for (j = 0; j < dims; j++)
			{
				float		expect = n == 0 ? 0.0f : x[(c % n) * dims + j];

				CHECK(pq.coarse[c * dims + j] == expect, "n %d c %d j %d: %g != %g", n, c, j,
					  pq.coarse[c * dims + j], expect);
			}
		}
		for (i = 0; i < n; i++)
		{
			float		err = gateann_pq_encode(&pq, x + i * dims, code, work, NULL);

			gateann_pq_decode(&pq, code, out);
			CHECK(err == 0.0f && dl2(out, x + i * dims, dims) == 0.0, "n %d row %d: error %g", n, i, err);
		}
		free(pq.centroids);
	}
}

/* also exercise the n >= 256 path right at the boundary with duplicates */
static void
test_duplicates(void)
{
	int			dims = 8,
				m = 2,
				n = 1000,
				i;
	float	   *x = malloc(sizeof(float) * dims * n);
	GateannPQ	pq;
	uint8_t		code[2 + GATEANN_PQ_CODE_EXTRA];
	float		out[8],
				work[8];

	/* only 3 distinct rows: most clusters stay empty, must not misbehave */
	for (i = 0; i < n * dims; i++)
		x[i] = (float) ((i / dims) % 3);
	train(&pq, dims, m, x, n, 7, 12);
	for (i = 0; i < 3; i++)
	{
		gateann_pq_encode(&pq, x + i * dims, code, work, NULL);
		gateann_pq_decode(&pq, code, out);
		CHECK(dl2(out, x + i * dims, dims) == 0.0, "row %d not reproduced exactly", i);
	}
	for (i = 0; i < 2 * K * dims; i++)
		CHECK(isfinite(pq.centroids[i]), "non-finite centroid value");
	CHECK(gateann_pq_coarse_spacing(&pq) == 8.0f, "spacing of rows 0, 1, 2 in 8 dims: %g",
		  gateann_pq_coarse_spacing(&pq));
	free(pq.centroids);
	free(x);
}

static int	interrupt_calls;

static void
count_interrupts(void)
{
	interrupt_calls++;
}

static void
test_interrupts(void)
{
	int			dims = 16,
				m = 4,
				n = 600,
				iters = 5;
	TestRng		r = {31};
	float	   *x = malloc(sizeof(float) * dims * n);
	void	   *scratch = malloc(gateann_pq_train_scratch_bytes(n, dims, m));
	GateannPQ	pq;

	gateann_pq_attach(&pq, dims, m, malloc(gateann_pq_codebook_bytes(dims)));
	trng_fill(&r, x, (size_t) dims * n, 1.0f);
	interrupt_calls = 0;
	gateann_pq_train(&pq, x, n, 3, iters, scratch, count_interrupts);
	CHECK(interrupt_calls >= m, "only %d calls", interrupt_calls);
	/* at least once per subspace, plus once per iteration actually run */
	CHECK(interrupt_calls >= m * 2, "only %d calls for %d iterations x %d subspaces", interrupt_calls, iters, m);
	free(pq.centroids);
	free(scratch);
	free(x);
}

/*
 * encode = the nearest coarse centroid, then the nearest residual centroid
 * per subspace, by brute force (double); its own term and the returned
 * error and coarse distance agree with the decoded vector
 */
static void
check_encode_bruteforce(const GateannPQ *pq, const float *vecs, int nv)
{
	int			dims = pq->dims,
				m = pq->m;
	uint8_t    *code = malloc(gateann_pq_code_bytes(m));
	float	   *work = malloc(sizeof(float) * dims);
	float	   *res = malloc(sizeof(float) * dims);
	float	   *dec = malloc(sizeof(float) * dims);
	int			v,
				s,
				c,
				j;

	for (v = 0; v < nv; v++)
	{
		const float *x = vecs + (size_t) v * dims;
		const float *ca;
		double		best = INFINITY,
					got,
					bias = 0.0,
					norm = 0.0;
		float		stored,
					coarse_dist,
					err;

		err = gateann_pq_encode(pq, x, code, work, &coarse_dist);
		ca = pq->coarse + (size_t) code[m] * dims;
		got = dl2(ca, x, dims);
		for (c = 0; c < K; c++)
		{
			double		d = dl2(pq->coarse + (size_t) c * dims, x, dims);

			if (d < best)
				best = d;
		}
		CHECK(got <= best * (1 + 1e-5) + 1e-20, "v %d: coarse %d dist %.9g best %.9g", v, code[m], got, best);
		CHECK(fabs(coarse_dist - got) <= 1e-4 * got + 1e-6, "v %d: coarse_dist %g expected %g", v, coarse_dist, got);
		for (j = 0; j < dims; j++)
			res[j] = x[j] - ca[j];
		for (s = 0; s < m; s++)
		{
			int			off = gateann_pq_sub_offset(dims, m, s);
			int			w = gateann_pq_sub_dims(dims, m, s);
			const float *cb = pq->centroids + (size_t) K * off;
			double		sbest = INFINITY,
						sgot = dl2(cb + (size_t) code[s] * w, res + off, w);

			for (c = 0; c < K; c++)
			{
				double		d = dl2(cb + (size_t) c * w, res + off, w);

				if (d < sbest)
					sbest = d;
			}
			CHECK(sgot <= sbest * (1 + 1e-4) + 1e-12, "v %d s %d: code %d dist %.9g best %.9g", v, s, code[s], sgot, sbest);
			for (j = 0; j < w; j++)
			{
				double		r = cb[(size_t) code[s] * w + j];

				norm += r * r;
				bias += r * ca[off + j];
			}
		}
		memcpy(&stored, code + m + 1, sizeof(float));
		CHECK(fabs(stored - (norm + 2 * bias)) <= 1e-4 * (norm + fabs(2 * bias)) + 1e-6,
			  "v %d: stored term %g expected %g", v, stored, norm + 2 * bias);
		gateann_pq_decode(pq, code, dec);
		CHECK(fabs(err - dl2(dec, x, dims)) <= 1e-4 * dl2(dec, x, dims) + 1e-6,
			  "v %d: error %g, decoded %g", v, err, dl2(dec, x, dims));
	}
	free(code);
	free(work);
	free(res);
	free(dec);
}

/* the distance a table gives a code is the distance to the decoded vector */
static void
check_tables(const GateannPQ *pq, const float *vecs, int nv, const float *queries, int nq)
{
	int			dims = pq->dims,
				m = pq->m;
	float	   *tl2 = malloc(sizeof(float) * gateann_pq_table_floats(m));
	float	   *tip = malloc(sizeof(float) * gateann_pq_table_floats(m));
	float	   *dec = malloc(sizeof(float) * dims);
	float	   *work = malloc(sizeof(float) * dims);
	uint8_t    *code = malloc(gateann_pq_code_bytes(m));
	int			q,
				v;

	for (q = 0; q < nq; q++)
	{
		const float *qv = queries + (size_t) q * dims;
		double		off = gateann_pq_distance_table(pq, qv, GATEANN_PQ_L2, tl2);

		CHECK(gateann_pq_distance_table(pq, qv, GATEANN_PQ_IP, tip) == 0.0, "q %d: an IP table has no offset", q);
		for (v = 0; v < nv; v++)
		{
			double		el2,
						eip,
						scale = 0.0,
						sl2,
						sip;
			int			j;

			gateann_pq_encode(pq, vecs + (size_t) v * dims, code, work, NULL);
			gateann_pq_decode(pq, code, dec);
			for (j = 0; j < dims; j++)
				scale += (double) qv[j] * qv[j] + (double) dec[j] * dec[j];
			el2 = dl2(qv, dec, dims);
			eip = -ddot(qv, dec, dims);
			sl2 = gateann_pq_code_distance(tl2, code, m) + off;
			sip = gateann_pq_code_distance(tip, code, m);
			/* the terms are sums of products of the size of the norms */
			CHECK(fabs(sl2 - el2) <= 2e-5 * scale + 1e-12, "q %d v %d: table l2 %.9g decode l2 %.9g", q, v, sl2, el2);
			CHECK(fabs(sip - eip) <= 2e-5 * scale + 1e-12, "q %d v %d: table ip %.9g decode ip %.9g", q, v, sip, eip);
		}
	}
	free(tl2);
	free(tip);
	free(dec);
	free(work);
	free(code);
}

static void
test_encode_and_tables(int dims, int m, int n)
{
	TestRng		r = {(uint64_t) dims * 1000 + m};
	float	   *x = malloc(sizeof(float) * (size_t) dims * n);
	float	   *q = malloc(sizeof(float) * (size_t) dims * 5);
	GateannPQ	pq;

	trng_fill(&r, x, (size_t) dims * n, 1.0f);
	trng_fill(&r, q, (size_t) dims * 5, 1.0f);
	train(&pq, dims, m, x, n, 11, 6);
	check_encode_bruteforce(&pq, x, n < 300 ? n : 300);
	check_tables(&pq, x, n < 50 ? n : 50, q, 5);
	free(pq.centroids);
	free(q);
	free(x);
}

/*
 * Clustered data: 64 well separated centers plus small noise.  The trained
 * codebook must reproduce vectors far better than random codes, Lloyd
 * iterations must not be worse than the initial sample codebook, and the
 * coarse quantizer must find the clusters: the residuals it leaves are
 * coded down to about the noise.
 */
static void
test_quantization_error(void)
{
	int			dims = 32,
				m = 8,
				n = 8000,
				ncl = 64,
				i,
				j,
				s;
	TestRng		r = {2024};
	float	   *centers = malloc(sizeof(float) * dims * ncl);
	float	   *x = malloc(sizeof(float) * dims * n);
	float		dec[32],
				work[32];
	uint8_t		code[8 + GATEANN_PQ_CODE_EXTRA];
	double		err_trained = 0.0,
				err_init = 0.0,
				err_random = 0.0;
	GateannPQ	pq,
				pq0;

	trng_fill(&r, centers, (size_t) dims * ncl, 10.0f);
	for (i = 0; i < n; i++)
	{
		int			cl = (int) (trng_next(&r) % ncl);

		for (j = 0; j < dims; j++)
			x[i * dims + j] = centers[cl * dims + j] + 0.3f * trng_float(&r);
	}
	train(&pq, dims, m, x, n, 1, 12);
	train(&pq0, dims, m, x, n, 1, 0);
	for (i = 0; i < n; i++)
	{
		err_trained += gateann_pq_encode(&pq, x + i * dims, code, work, NULL);
		err_init += gateann_pq_encode(&pq0, x + i * dims, code, work, NULL);
		for (s = 0; s < m; s++)
			code[s] = (uint8_t) (trng_next(&r) & 255);
		code[m] = (uint8_t) (trng_next(&r) & 255);
		gateann_pq_decode(&pq, code, dec);
		err_random += dl2(dec, x + i * dims, dims);
	}
	err_trained /= n;
	err_init /= n;
	err_random /= n;
	printf("    # mean sq error: trained %.4f, initial sample %.4f, random codes %.4f\n",
		   err_trained, err_init, err_random);
	CHECK(err_trained < 0.01 * err_random, "trained %.4f vs random %.4f", err_trained, err_random);
	CHECK(err_trained <= err_init * 1.0001, "trained %.4f worse than init %.4f", err_trained, err_init);
	/* the noise: 32 dims * var(U(-0.3,0.3)) = 0.96; its residual codes get well below */
	CHECK(err_trained < 0.5, "trained error %.4f not below the noise", err_trained);
	free(pq.centroids);
	free(pq0.centroids);
	free(x);
	free(centers);
}

/*
 * A query far outside the data the codebook was trained on (1e8 in every
 * dimension, data of unit scale): float terms ||q - C_a||^2 of about 1e17
 * cannot tell codes apart, so the table must not be made of them.  Codes
 * whose decoded vectors are nearer the query must get smaller distances:
 * every pair whose exact distances differ by more than the float rounding
 * of the table's terms (a few hundred) is ordered alike.
 */
static void
test_far_query(void)
{
	int			dims = 16,
				m = 4,
				n = 2000,
				nv = 200,
				i,
				j,
				wrong = 0,
				pairs = 0;
	TestRng		r = {77};
	float	   *x = malloc(sizeof(float) * (size_t) dims * n);
	float		q[16],
				dec[16],
				work[16];
	float	   *table = malloc(sizeof(float) * gateann_pq_table_floats(m));
	uint8_t		code[4 + GATEANN_PQ_CODE_EXTRA];
	double		exact[200],
				pqd[200],
				off;
	GateannPQ	pq;

	trng_fill(&r, x, (size_t) dims * n, 1.0f);
	train(&pq, dims, m, x, n, 5, 6);
	for (j = 0; j < dims; j++)
		q[j] = 1e8f;
	off = gateann_pq_distance_table(&pq, q, GATEANN_PQ_L2, table);
	CHECK(off > 1e16, "a far query's table says how far it is (%g)", off);
	for (i = 0; i < nv; i++)
	{
		gateann_pq_encode(&pq, x + (size_t) i * dims, code, work, NULL);
		gateann_pq_decode(&pq, code, dec);
		exact[i] = dl2(q, dec, dims);
		pqd[i] = gateann_pq_code_distance(table, code, m);
	}
	for (i = 0; i < nv; i++)
		for (j = i + 1; j < nv; j++)
		{
			if (fabs(exact[i] - exact[j]) < 1e3)
				continue;
			pairs++;
			if ((exact[i] < exact[j]) != (pqd[i] < pqd[j]))
				wrong++;
		}
	CHECK(pairs > nv * (nv - 1) / 4, "%d pairs to order", pairs);
	CHECK(wrong == 0, "%d of %d pairs ordered against their exact distances", wrong, pairs);
	free(pq.centroids);
	free(table);
	free(x);
}

static void
run_case_fmt(const char *what, int which)
{
	char		name[160];

	snprintf(name, sizeof(name), "%spq %s", prefix, what);
	switch (which)
	{
		case 0:
			RUN_CASE(name, test_layout());
			break;
		case 1:
			RUN_CASE(name, test_default_subspaces());
			break;
		case 2:
			RUN_CASE(name, test_determinism());
			break;
		case 3:
			RUN_CASE(name, test_small_n());
			break;
		case 4:
			RUN_CASE(name, test_duplicates());
			break;
		case 5:
			RUN_CASE(name, test_interrupts());
			break;
		case 6:
			RUN_CASE(name, test_encode_and_tables(128, 32, 2000));
			break;
		case 7:
			RUN_CASE(name, test_encode_and_tables(13, 3, 700));
			break;
		case 8:
			RUN_CASE(name, test_encode_and_tables(768, 96, 600));
			break;
		case 9:
			RUN_CASE(name, test_encode_and_tables(100, 7, 500));
			break;
		case 10:
			RUN_CASE(name, test_encode_and_tables(300, 300, 400));
			break;
		case 11:
			RUN_CASE(name, test_encode_and_tables(2000, 10, 300));
			break;
		case 12:
			RUN_CASE(name, test_quantization_error());
			break;
		case 13:
			RUN_CASE(name, test_far_query());
			break;
		case 14:
			RUN_CASE(name, test_train_in_parts());
			break;
	}
}

void
run_pq_tests(void)
{
	snprintf(prefix, sizeof(prefix), "[%s] ", gateann_distance_impl());
	run_case_fmt("sub_offset/sub_dims cover dims exactly", 0);
	run_case_fmt("default_subspaces rule", 1);
	run_case_fmt("train determinism (same seed => identical bytes)", 2);
	run_case_fmt("train n < 256 and n == 0", 3);
	run_case_fmt("train on duplicate rows (empty clusters)", 4);
	run_case_fmt("check_interrupts called per subspace and iteration", 5);
	run_case_fmt("encode nearest + tables, dims 128 m 32", 6);
	run_case_fmt("encode nearest + tables, dims 13 m 3 (uneven)", 7);
	run_case_fmt("encode nearest + tables, dims 768 m 96", 8);
	run_case_fmt("encode nearest + tables, dims 100 m 7 (uneven)", 9);
	run_case_fmt("encode nearest + tables, dims 300 m 300 (w = 1)", 10);
	run_case_fmt("encode nearest + tables, dims 2000 m 10 (w = 200)", 11);
	run_case_fmt("quantization error on clustered data", 12);
	run_case_fmt("a query far outside the trained data: tables still order codes", 13);
	run_case_fmt("train in parts, as the parallel build does: the same codebook", 14);
}
