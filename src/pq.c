/*
 * pq.c — residual product quantization (pq.h): k-means training of the
 * coarse centroids and of per-subspace residual codebooks, encoding, and
 * per-query distance tables.
 *
 * Plain C, no PostgreSQL headers, no allocation, no global state: every
 * buffer comes from the caller.  The distance work goes through the
 * dispatched kernels of distance.h (gateann_pq_nearest & co.), which handle
 * "one short slice against 256 centroids" with SIMD across centroids.
 */
#include "pq.h"
#include "distance.h"

#include <string.h>

#define PQ_K GATEANN_PQ_CENTROIDS
#define SCRATCH_ALIGN 64

int
gateann_pq_sub_offset(int dims, int m, int s)
{
	int			base = dims / m;
	int			rem = dims % m;

	return s * base + (s < rem ? s : rem);
}

int
gateann_pq_sub_dims(int dims, int m, int s)
{
	return dims / m + (s < dims % m ? 1 : 0);
}

size_t
gateann_pq_codebook_bytes(int dims)
{
	return 2 * (size_t) dims * PQ_K * sizeof(float);
}

/*
 * Default number of subspaces (pq.h).  Examples: 1 -> 1, 2 -> 2, 3 -> 3,
 * 8 -> 8, 13 -> 8 (uneven), 128 -> 32, 384 -> 96, 768 -> 192, 960 -> 240,
 * 1024 -> 256, 1536 -> 256, 16000 -> 250.
 *
 * Measured on the data-shape matrix (bench/gateann_bench/shapes.py): at
 * 960 dimensions a 96-byte code (10 dimensions per subspace) left recall@10
 * at 0.6 where 240 bytes gave 0.9; two-dimensional data coded in one byte
 * was 0.92 with exact neighbors tens of times closer than the code could
 * tell apart.
 */
int
gateann_pq_default_subspaces(int dims)
{
	int			t;
	int			d;

	t = dims / 4;
	if (t < (dims < 8 ? dims : 8))
		t = dims < 8 ? dims : 8;
	if (t > GATEANN_PQ_DEFAULT_MAX)
		t = GATEANN_PQ_DEFAULT_MAX;
	if (t < 1)
		t = 1;
	for (d = t; 2 * d >= t && d >= 1; d--)
	{
		if (dims % d == 0)
			return d;
	}
	return t;
}

/* ----------------------------------------------------------------
 * Training
 * ----------------------------------------------------------------
 */

typedef struct PQScratchLayout
{
	size_t		slice;			/* n * wmax floats: contiguous subspace slices */
	size_t		assign;			/* n ints: current assignment */
	size_t		dist;			/* n floats: distance to assigned centroid */
	size_t		sums;			/* k * wmax doubles */
	size_t		counts;			/* k ints */
	size_t		chosen;			/* k ints: initial sample rows */
	size_t		total;
} PQScratchLayout;

static size_t
align_up(size_t x)
{
	return (x + SCRATCH_ALIGN - 1) & ~((size_t) SCRATCH_ALIGN - 1);
}

/*
 * slice_w: floats per row of the contiguous copy a subspace is trained on
 * (0: train on the caller's rows in place); w: the widest row trained on;
 * k: the centroids.
 */
static void
pq_scratch_layout(int n, size_t slice_w, size_t w, int k, PQScratchLayout *l)
{
	size_t		nn = n > 0 ? (size_t) n : 0;
	size_t		off = 0;

	l->slice = off;
	off = align_up(off + nn * slice_w * sizeof(float));
	l->assign = off;
	off = align_up(off + nn * sizeof(int));
	l->dist = off;
	off = align_up(off + nn * sizeof(float));
	l->sums = off;
	off = align_up(off + (size_t) k * w * sizeof(double));
	l->counts = off;
	off = align_up(off + (size_t) k * sizeof(int));
	l->chosen = off;
	off = align_up(off + (size_t) k * sizeof(int));
	l->total = off;
}

/* the widest subspace of dims split into m */
static size_t
pq_widest_subspace(int dims, int m)
{
	return (m > 0 && dims > 0) ? (size_t) ((dims + m - 1) / m) : 1;
}

size_t
gateann_pq_train_scratch_bytes(int n, int dims, int m)
{
	size_t		subspace = gateann_pq_subspace_scratch_bytes(n, dims, m);
	size_t		coarse = gateann_kmeans_scratch_bytes(PQ_K, n, dims > 0 ? dims : 1);

	return subspace > coarse ? subspace : coarse;
}

/* splitmix64: tiny, good enough, fully deterministic */
static uint64_t
pq_rand_next(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* uniform-ish integer in [0, bound) (bias < bound / 2^64) */
static int
pq_rand_below(uint64_t *state, int bound)
{
	return (int) (pq_rand_next(state) % (uint64_t) bound);
}

/*
 * Choose k distinct indices in [0, n) (n >= k) with Floyd's algorithm.
 */
static void
pq_sample_distinct(uint64_t *state, int n, int k, int *chosen)
{
	int			cnt = 0;
	int			j;

	for (j = n - k; j < n; j++)
	{
		int			t = pq_rand_below(state, j + 1);
		int			seen;

		for (seen = 0; seen < cnt; seen++)
		{
			if (chosen[seen] == t)
				break;
		}
		chosen[cnt] = (seen < cnt) ? j : t;
		cnt++;
	}
}

/*
 * The nearest of C's k centroids of w floats to x, and its squared distance:
 * PQ's 256 through the dispatched kernel, any other count with gateann_l2sq.
 */
static inline int
kmeans_nearest(const float *C, int k, const float *x, int w, float *dist)
{
	int			best = 0;
	float		bestd;
	int			c;

	if (k == PQ_K)
		return gateann_pq_nearest(C, x, w, dist);
	bestd = gateann_l2sq(C, x, w);
	for (c = 1; c < k; c++)
	{
		float		d = gateann_l2sq(C + (size_t) c * w, x, w);

		if (d < bestd)
		{
			bestd = d;
			best = c;
		}
	}
	*dist = bestd;
	return best;
}

/*
 * k-means in steps (pq.h): the serial trainings below and the parallel
 * build (pq_parallel.c) run the same three, so both give the same centroids.
 */
void
gateann_kmeans_start(float *C, int k, const float *X, int n, int w, uint64_t *rng,
					 int *assign, int *chosen)
{
	int			c;
	int			i;

	/* initial centroids: distinct random sample rows */
	pq_sample_distinct(rng, n, k, chosen);
	for (c = 0; c < k; c++)
		memcpy(C + (size_t) c * w, X + (size_t) chosen[c] * w, w * sizeof(float));
	for (i = 0; i < n; i++)
		assign[i] = -1;
}

int
gateann_kmeans_assign(const float *C, int k, const float *X, int w, int from, int to,
					  int *assign, float *dist)
{
	int			changed = 0;
	int			i;

	for (i = from; i < to; i++)
	{
		float		d;
		int			a = kmeans_nearest(C, k, X + (size_t) i * w, w, &d);

		if (a != assign[i])
		{
			assign[i] = a;
			changed++;
		}
		dist[i] = d;
	}
	return changed;
}

void
gateann_kmeans_update(float *C, int k, const float *X, int n, int w, const int *assign,
					  float *dist, double *sums, int *counts)
{
	int			c;
	int			i;
	int			j;

	memset(sums, 0, (size_t) k * w * sizeof(double));
	memset(counts, 0, k * sizeof(int));
	for (i = 0; i < n; i++)
	{
		const float *x = X + (size_t) i * w;
		double	   *s = sums + (size_t) assign[i] * w;

		for (j = 0; j < w; j++)
			s[j] += x[j];
		counts[assign[i]]++;
	}
	for (c = 0; c < k; c++)
	{
		if (counts[c] > 0)
		{
			double		inv = 1.0 / counts[c];
			float	   *cc = C + (size_t) c * w;
			const double *s = sums + (size_t) c * w;

			for (j = 0; j < w; j++)
				cc[j] = (float) (s[j] * inv);
		}
	}

	/*
	 * Empty clusters: re-seed each (in index order) from the point currently
	 * farthest from its centroid (lowest row on ties), each point used at
	 * most once.  If no point is away from its centroid (duplicate data),
	 * leave the remaining empty centroids alone.
	 */
	for (c = 0; c < k; c++)
	{
		int			far = -1;
		float		fard = 0.0f;

		if (counts[c] > 0)
			continue;
		for (i = 0; i < n; i++)
		{
			if (dist[i] > fard)
			{
				fard = dist[i];
				far = i;
			}
		}
		if (far < 0)
			break;
		memcpy(C + (size_t) c * w, X + (size_t) far * w, w * sizeof(float));
		dist[far] = -1.0f;
	}
}

/*
 * Lloyd k-means for one subspace.  X holds n >= k contiguous rows of w
 * floats, C receives k centroids of w floats.
 */
static void
pq_train_subspace(float *C, const float *X, int n, int w, int k, uint64_t *rng,
				  int iterations, int *assign, float *dist, double *sums,
				  int *counts, int *chosen, void (*check_interrupts) (void))
{
	int			it;

	gateann_kmeans_start(C, k, X, n, w, rng, assign, chosen);
	for (it = 0; it < iterations; it++)
	{
		if (check_interrupts)
			check_interrupts();
		if (gateann_kmeans_assign(C, k, X, w, 0, n, assign, dist) == 0)
			break;				/* converged: centroids are already the means */
		gateann_kmeans_update(C, k, X, n, w, assign, dist, sums, counts);
	}
}

uint64_t
gateann_pq_coarse_seed(uint64_t seed)
{
	return seed ^ UINT64_C(0x636F61727365);	/* "coarse" */
}

void
gateann_pq_residuals(const GateannPQ *pq, float *sample, int from, int to)
{
	int			dims = pq->dims;
	int			i;

	for (i = from; i < to; i++)
	{
		float	   *x = sample + (size_t) i * dims;
		const float *cc = pq->coarse +
			(size_t) gateann_pq_nearest(pq->coarse, x, dims, NULL) * dims;
		int			j;

		for (j = 0; j < dims; j++)
			x[j] -= cc[j];
	}
}

size_t
gateann_pq_subspace_scratch_bytes(int n, int dims, int m)
{
	PQScratchLayout l;
	size_t		wmax = pq_widest_subspace(dims, m);

	pq_scratch_layout(n, wmax, wmax, PQ_K, &l);
	return l.total + SCRATCH_ALIGN;
}

void
gateann_pq_train_subspace(GateannPQ *pq, const float *residuals, int n, uint64_t seed,
						  int iterations, int s, void *scratch,
						  void (*check_interrupts) (void))
{
	int			dims = pq->dims;
	int			off = gateann_pq_sub_offset(dims, pq->m, s);
	int			w = gateann_pq_sub_dims(dims, pq->m, s);
	float	   *C = pq->centroids + (size_t) PQ_K * off;
	uint64_t	rng = seed ^ ((uint64_t) (s + 1) * UINT64_C(0xD1B54A32D192ED03));
	PQScratchLayout l;
	size_t		wmax;
	char	   *base;
	float	   *X;
	int			c;
	int			i;

	if (w == 0)
		return;
	if (n < PQ_K)
	{
		for (c = 0; c < PQ_K; c++)
			memcpy(C + (size_t) c * w, residuals + (size_t) (c % n) * dims + off,
				   w * sizeof(float));
		return;
	}

	wmax = pq_widest_subspace(dims, pq->m);
	pq_scratch_layout(n, wmax, wmax, PQ_K, &l);
	base = (char *) align_up((size_t) (uintptr_t) scratch);
	X = (float *) (base + l.slice);

	/* gather the subspace slice of every sample row contiguously */
	for (i = 0; i < n; i++)
		memcpy(X + (size_t) i * w, residuals + (size_t) i * dims + off,
			   w * sizeof(float));

	pq_train_subspace(C, X, n, w, PQ_K, &rng, iterations, (int *) (base + l.assign),
					  (float *) (base + l.dist), (double *) (base + l.sums),
					  (int *) (base + l.counts), (int *) (base + l.chosen),
					  check_interrupts);
}

void
gateann_pq_train(GateannPQ *pq, float *sample, int n,
				 uint64_t seed, int iterations, void *scratch,
				 void (*check_interrupts) (void))
{
	int			dims = pq->dims;
	int			s;
	int			i;
	int			c;

	memset(pq->centroids, 0, gateann_pq_codebook_bytes(dims));
	if (n <= 0 || dims <= 0 || pq->m <= 0)
		return;

	/* the coarse quantizer, then every sample row becomes its residual */
	if (n < PQ_K)
	{
		for (c = 0; c < PQ_K; c++)
			memcpy(pq->coarse + (size_t) c * dims, sample + (size_t) (c % n) * dims,
				   dims * sizeof(float));
	}
	else
		gateann_kmeans(pq->coarse, PQ_K, sample, n, dims, gateann_pq_coarse_seed(seed),
					   iterations, scratch, check_interrupts);
	for (i = 0; i < n; i += 4096)
	{
		gateann_pq_residuals(pq, sample, i, i + 4096 < n ? i + 4096 : n);
		if (check_interrupts)
			check_interrupts();
	}

	for (s = 0; s < pq->m; s++)
	{
		if (check_interrupts)
			check_interrupts();
		gateann_pq_train_subspace(pq, sample, n, seed, iterations, s, scratch,
								  check_interrupts);
	}
}

size_t
gateann_kmeans_scratch_bytes(int k, int n, int w)
{
	PQScratchLayout l;

	pq_scratch_layout(n, 0, (size_t) w, k, &l);
	return l.total + SCRATCH_ALIGN;
}

void
gateann_kmeans(float *C, int k, const float *X, int n, int w, uint64_t seed,
			   int iterations, void *scratch, void (*check_interrupts) (void))
{
	PQScratchLayout l;
	char	   *base;
	uint64_t	rng = seed;

	pq_scratch_layout(n, 0, (size_t) w, k, &l);
	base = (char *) align_up((size_t) (uintptr_t) scratch);
	pq_train_subspace(C, X, n, w, k, &rng, iterations,
					  (int *) (base + l.assign), (float *) (base + l.dist),
					  (double *) (base + l.sums), (int *) (base + l.counts),
					  (int *) (base + l.chosen), check_interrupts);
}

/* ----------------------------------------------------------------
 * Encoding, decoding, distance tables
 * ----------------------------------------------------------------
 */

float
gateann_pq_encode(const GateannPQ *pq, const float *vec, uint8_t *code, float *work,
				  float *coarse_dist)
{
	int			dims = pq->dims;
	int			m = pq->m;
	int			s;
	int			j;
	int			a = gateann_pq_nearest(pq->coarse, vec, dims, coarse_dist);
	const float *ca = pq->coarse + (size_t) a * dims;
	float		bias = 0.0f;
	float		error = 0.0f;

	for (j = 0; j < dims; j++)
		work[j] = vec[j] - ca[j];
	for (s = 0; s < m; s++)
	{
		int			off = gateann_pq_sub_offset(dims, m, s);
		int			w = gateann_pq_sub_dims(dims, m, s);
		const float *C = pq->centroids + (size_t) PQ_K * off;
		int			k;
		float		d;

		if (w == 0)
		{
			code[s] = 0;
			continue;
		}
		k = gateann_pq_nearest(C, work + off, w, &d);
		code[s] = (uint8_t) k;
		error += d;
		/* ||r'||^2 + 2 <C_a, r'>, subspace by subspace */
		for (j = 0; j < w; j++)
		{
			float		r = C[(size_t) k * w + j];

			bias += r * (r + 2.0f * ca[off + j]);
		}
	}
	code[m] = (uint8_t) a;
	memcpy(code + m + 1, &bias, sizeof(float));
	return error;
}

float
gateann_pq_coarse_spacing(const GateannPQ *pq)
{
	double		sum = 0;
	int			counted = 0;
	int			a,
				b;

	for (a = 0; a < PQ_K; a++)
	{
		float		best = -1.0f;

		for (b = 0; b < PQ_K; b++)
		{
			float		d;

			if (b == a)
				continue;
			d = gateann_l2sq(pq->coarse + (size_t) a * pq->dims,
							 pq->coarse + (size_t) b * pq->dims, pq->dims);
			if (d > 0.0f && (best < 0.0f || d < best))
				best = d;
		}
		if (best > 0.0f)
		{
			sum += best;
			counted++;
		}
	}
	return counted > 0 ? (float) (sum / counted) : 0.0f;
}

void
gateann_pq_decode(const GateannPQ *pq, const uint8_t *code, float *out)
{
	int			dims = pq->dims;
	int			m = pq->m;
	const float *ca = pq->coarse + (size_t) code[m] * dims;
	int			s;

	for (s = 0; s < m; s++)
	{
		int			off = gateann_pq_sub_offset(dims, m, s);
		int			w = gateann_pq_sub_dims(dims, m, s);
		const float *r = pq->centroids + (size_t) PQ_K * off + (size_t) code[s] * w;
		int			j;

		for (j = 0; j < w; j++)
			out[off + j] = ca[off + j] + r[j];
	}
}

/*
 * The coarse terms of a far query (gateann_pq_distance_table), in double:
 * tail[a] = ||C_a - C_0||^2 - 2 <q - C_0, C_a - C_0>.  Returns ||q - C_0||^2.
 */
static double
coarse_terms_far(const GateannPQ *pq, const float *query, float *tail)
{
	int			dims = pq->dims;
	const float *c0;
	double		offset = 0.0;
	int			a0 = 0,
				a,
				j;

	for (a = 1; a < PQ_K; a++)
		if (tail[a] < tail[a0])
			a0 = a;
	c0 = pq->coarse + (size_t) a0 * dims;
	for (j = 0; j < dims; j++)
		offset += ((double) query[j] - c0[j]) * ((double) query[j] - c0[j]);
	for (a = 0; a < PQ_K; a++)
	{
		const float *ca = pq->coarse + (size_t) a * dims;
		double		sq = 0.0,
					dot = 0.0;

		for (j = 0; j < dims; j++)
		{
			double		diff = (double) ca[j] - c0[j];

			sq += diff * diff;
			dot += ((double) query[j] - c0[j]) * diff;
		}
		tail[a] = (float) (sq - 2.0 * dot);
	}
	return offset;
}

double
gateann_pq_distance_table(const GateannPQ *pq, const float *query,
						  GateannPQMetric metric, float *table)
{
	int			dims = pq->dims;
	int			m = pq->m;
	float	   *tail = table + (size_t) m * PQ_K;
	int			s;

	/* residual terms: -<q_s, r'> (IP), -2 <q_s, r'> (L2) */
	for (s = 0; s < m; s++)
	{
		int			off = gateann_pq_sub_offset(dims, m, s);
		int			w = gateann_pq_sub_dims(dims, m, s);
		const float *C = pq->centroids + (size_t) PQ_K * off;
		float	   *t = table + (size_t) s * PQ_K;
		int			c;

		if (w == 0)
		{
			memset(t, 0, PQ_K * sizeof(float));
			continue;
		}
		gateann_pq_ip_table(C, query + off, w, t);
		if (metric == GATEANN_PQ_L2)
			for (c = 0; c < PQ_K; c++)
				t[c] *= 2.0f;
	}
	/* coarse terms, and the weight of the code's own term */
	if (metric == GATEANN_PQ_IP)
	{
		gateann_pq_ip_table(pq->coarse, query, dims, tail);
		tail[PQ_K] = 0.0f;
	}
	else
	{
		float		lo,
					hi;
		int			a;

		gateann_pq_l2_table(pq->coarse, query, dims, tail);
		tail[PQ_K] = 1.0f;

		/*
		 * Far from every centroid: the terms differ in fewer than the
		 * lowest 16 of float's 24 bits, where the residual terms (of the
		 * size of the differences) would be lost too.
		 */
		lo = hi = tail[0];
		for (a = 1; a < PQ_K; a++)
		{
			if (tail[a] < lo)
				lo = tail[a];
			if (tail[a] > hi)
				hi = tail[a];
		}
		if (lo > 256.0f * (hi - lo))
			return coarse_terms_far(pq, query, tail);
	}
	return 0.0;
}
