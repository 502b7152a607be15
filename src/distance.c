/*
 * distance.c — vector distance kernels with runtime CPU dispatch.
 *
 * Scalar reference kernels are always compiled.  On x86 the AVX2+FMA and
 * AVX-512F variants are compiled with function-level target attributes (no
 * -march flags needed, nothing is executed unless the running CPU has the
 * features) and picked once by gateann_distance_init().
 *
 * Plain C, no PostgreSQL headers: linked into the extension and into the
 * standalone unit tests.
 */
#include "distance.h"

#include <stdlib.h>
#include <string.h>
#include <float.h>

#if defined(__x86_64__) || defined(__i386__)
#define GATEANN_X86 1
#include <immintrin.h>
#endif

#define PQ_K 256				/* centroids per subspace */

/* ----------------------------------------------------------------
 * Scalar reference kernels
 * ----------------------------------------------------------------
 */

float
gateann_l2sq_scalar(const float *a, const float *b, int dims)
{
	float		s0 = 0.0f,
				s1 = 0.0f,
				s2 = 0.0f,
				s3 = 0.0f;
	int			i = 0;

	for (; i + 4 <= dims; i += 4)
	{
		float		d0 = a[i] - b[i];
		float		d1 = a[i + 1] - b[i + 1];
		float		d2 = a[i + 2] - b[i + 2];
		float		d3 = a[i + 3] - b[i + 3];

		s0 += d0 * d0;
		s1 += d1 * d1;
		s2 += d2 * d2;
		s3 += d3 * d3;
	}
	for (; i < dims; i++)
	{
		float		d = a[i] - b[i];

		s0 += d * d;
	}
	return (s0 + s1) + (s2 + s3);
}

float
gateann_dot_scalar(const float *a, const float *b, int dims)
{
	float		s0 = 0.0f,
				s1 = 0.0f,
				s2 = 0.0f,
				s3 = 0.0f;
	int			i = 0;

	for (; i + 4 <= dims; i += 4)
	{
		s0 += a[i] * b[i];
		s1 += a[i + 1] * b[i + 1];
		s2 += a[i + 2] * b[i + 2];
		s3 += a[i + 3] * b[i + 3];
	}
	for (; i < dims; i++)
		s0 += a[i] * b[i];
	return (s0 + s1) + (s2 + s3);
}

float
gateann_pq_adc_scalar(const float *table, const uint8_t *code, int m)
{
	float		s0 = 0.0f,
				s1 = 0.0f,
				s2 = 0.0f,
				s3 = 0.0f;
	int			s = 0;

	/*
	 * Eight codes per 64-bit load: halves the number of loads, which bound
	 * this loop (the table lookups themselves are independent).
	 */
	for (; s + 8 <= m; s += 8)
	{
		const float *t = table + (size_t) s * PQ_K;
		uint64_t	c;

		memcpy(&c, code + s, sizeof(c));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		c = __builtin_bswap64(c);
#endif
		s0 += t[c & 255];
		s1 += t[PQ_K + ((c >> 8) & 255)];
		s2 += t[2 * PQ_K + ((c >> 16) & 255)];
		s3 += t[3 * PQ_K + ((c >> 24) & 255)];
		s0 += t[4 * PQ_K + ((c >> 32) & 255)];
		s1 += t[5 * PQ_K + ((c >> 40) & 255)];
		s2 += t[6 * PQ_K + ((c >> 48) & 255)];
		s3 += t[7 * PQ_K + (c >> 56)];
	}
	for (; s < m; s++)
		s0 += table[(size_t) s * PQ_K + code[s]];
	return (s0 + s1) + (s2 + s3);
}

int
gateann_pq_nearest_scalar(const float *centroids, const float *x, int w,
						  float *dist)
{
	int			best = 0;
	float		bestd = FLT_MAX;
	int			c;

	if (w == 4)
	{
		float		x0 = x[0],
					x1 = x[1],
					x2 = x[2],
					x3 = x[3];

		for (c = 0; c < PQ_K; c++)
		{
			const float *p = centroids + c * 4;
			float		d0 = p[0] - x0;
			float		d1 = p[1] - x1;
			float		d2 = p[2] - x2;
			float		d3 = p[3] - x3;
			float		d = (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);

			if (d < bestd)
			{
				bestd = d;
				best = c;
			}
		}
	}
	else
	{
		for (c = 0; c < PQ_K; c++)
		{
			float		d = gateann_l2sq_scalar(centroids + (size_t) c * w, x, w);

			if (d < bestd)
			{
				bestd = d;
				best = c;
			}
		}
	}
	if (dist)
		*dist = bestd;
	return best;
}

void
gateann_pq_l2_table_scalar(const float *centroids, const float *x, int w,
						   float *out)
{
	int			c;

	for (c = 0; c < PQ_K; c++)
		out[c] = gateann_l2sq_scalar(centroids + (size_t) c * w, x, w);
}

void
gateann_pq_ip_table_scalar(const float *centroids, const float *x, int w,
						   float *out)
{
	int			c;

	for (c = 0; c < PQ_K; c++)
		out[c] = -gateann_dot_scalar(centroids + (size_t) c * w, x, w);
}

/* ----------------------------------------------------------------
 * Kernels written once: l2sq and dot are one body, the 8-bit code
 * distance another, in GCC/Clang vector extensions, instantiated per
 * instruction set with vectors of its register width (with 16-float
 * vectors the AVX2 8-bit kernel took 173 ns for 384 dimensions, with
 * 8-float ones 30).  Only the widening of bytes to floats is written per
 * set: compilers convert a byte vector one lane at a time.
 * As fast as the hand-written kernels they replaced (test/unit bench, ns
 * per call, before / after: AVX2 l2sq 128d 7.69 / 7.62, 768d 42.8 / 43.1;
 * AVX-512 8.03 / 7.90, 45.1 / 45.2).  The PQ kernels below are still
 * written per set.
 * ----------------------------------------------------------------
 */
typedef float vec16f __attribute__((vector_size(64)));
typedef float vec8f __attribute__((vector_size(32)));
typedef float vec4f __attribute__((vector_size(16)));

/*
 * Each variant uses vectors its registers hold (a compiler keeps wider ones
 * in memory): vec16f for AVX-512, vec8f for AVX2, vec4f for the baseline.
 * Vectors go to helpers by pointer: a vector argument or result wider than
 * the target's registers changes the ABI.
 */
#define LOADV(vtype, p) \
	({ vtype v_; memcpy(&v_, (p), sizeof(v_)); v_; })

/* The sum of a vector's lanes, halving (not one lane after another) */
static inline __attribute__((always_inline)) float
sum4(const vec4f *v)
{
	return ((*v)[0] + (*v)[2]) + ((*v)[1] + (*v)[3]);
}

static inline __attribute__((always_inline)) float
sum8(const vec8f *v)
{
	vec4f		lo,
				hi;

	memcpy(&lo, v, sizeof(lo));
	memcpy(&hi, (const char *) v + sizeof(lo), sizeof(hi));
	lo += hi;
	return sum4(&lo);
}

static inline __attribute__((always_inline)) float
sum16(const vec16f *v)
{
	vec8f		lo,
				hi;

	memcpy(&lo, v, sizeof(lo));
	memcpy(&hi, (const char *) v + sizeof(lo), sizeof(hi));
	lo += hi;
	return sum8(&lo);
}

/* The terms the two sums add up: of vectors or of single floats */
#define L2SQ_TERM(x, y) ({ __typeof__(x) d_ = (x) - (y); d_ * d_; })
#define DOT_TERM(x, y) ((x) * (y))

/*
 * sum(term(a[i], b[i])) with vectors of type vtype (lanes floats, summed
 * by sumv): four sums, so that adds do not wait on each other
 */
#define DEFINE_TERM_SUM(name, attrs, vtype, lanes, sumv, term) \
attrs float \
name(const float *a, const float *b, int dims) \
{ \
	vtype		s0 = {0}, \
				s1 = {0}, \
				s2 = {0}, \
				s3 = {0}; \
	float		sum; \
	int			i = 0; \
 \
	for (; i + 4 * (lanes) <= dims; i += 4 * (lanes)) \
	{ \
		s0 += term(LOADV(vtype, a + i), LOADV(vtype, b + i)); \
		s1 += term(LOADV(vtype, a + i + (lanes)), LOADV(vtype, b + i + (lanes))); \
		s2 += term(LOADV(vtype, a + i + 2 * (lanes)), LOADV(vtype, b + i + 2 * (lanes))); \
		s3 += term(LOADV(vtype, a + i + 3 * (lanes)), LOADV(vtype, b + i + 3 * (lanes))); \
	} \
	for (; i + (lanes) <= dims; i += (lanes)) \
		s0 += term(LOADV(vtype, a + i), LOADV(vtype, b + i)); \
	s0 = (s0 + s1) + (s2 + s3); \
	sum = sumv(&s0); \
	for (; i < dims; i++) \
		sum += term(a[i], b[i]); \
	return sum; \
}

/*
 * sum((qt[i] - step[i] * code[i])^2) over an 8-bit code (distance.h);
 * widen(p, &v) turns `lanes` bytes at p into floats
 */
#define DEFINE_L2SQ_SQ8(name, attrs, vtype, lanes, sumv, widen) \
attrs float \
name(const float *qt, const uint8_t *code, const float *step, int dims) \
{ \
	vtype		acc0 = {0}, \
				acc1 = {0}, \
				c0, \
				c1; \
	float		sum; \
	int			i = 0; \
 \
	/* two sums: one waits on the other's previous add otherwise */ \
	for (; i + 2 * (lanes) <= dims; i += 2 * (lanes)) \
	{ \
		widen(code + i, &c0); \
		widen(code + i + (lanes), &c1); \
		c0 = LOADV(vtype, qt + i) - LOADV(vtype, step + i) * c0; \
		c1 = LOADV(vtype, qt + i + (lanes)) - LOADV(vtype, step + i + (lanes)) * c1; \
		acc0 += c0 * c0; \
		acc1 += c1 * c1; \
	} \
	for (; i + (lanes) <= dims; i += (lanes)) \
	{ \
		widen(code + i, &c0); \
		c0 = LOADV(vtype, qt + i) - LOADV(vtype, step + i) * c0; \
		acc0 += c0 * c0; \
	} \
	acc0 += acc1; \
	sum = sumv(&acc0); \
	for (; i < dims; i++) \
	{ \
		float		diff = qt[i] - step[i] * code[i]; \
 \
		sum += diff * diff; \
	} \
	return sum; \
}

static inline void
widen16_scalar(const uint8_t *p, vec16f *out)
{
	int			l;

	for (l = 0; l < 16; l++)
		(*out)[l] = p[l];
}

/* (16 lanes here measured faster than 4: 87 against 516 ns for 384 dims) */
DEFINE_L2SQ_SQ8(gateann_l2sq_sq8_scalar, , vec16f, 16, sum16, widen16_scalar)

#ifdef GATEANN_X86
static inline __attribute__((target("avx2,fma"), always_inline)) void
widen8_avx2(const uint8_t *p, vec8f *out)
{
	uint64_t	bytes;
	__m256		f;

	memcpy(&bytes, p, sizeof(bytes));
	f = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long) bytes)));
	memcpy(out, &f, sizeof(f));
}

static inline __attribute__((target("avx512f,avx2,fma"), always_inline)) void
widen16_avx512(const uint8_t *p, vec16f *out)
{
	__m512		f = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) p)));

	memcpy(out, &f, sizeof(f));
}

#define AVX2_TARGET		__attribute__((target("avx2,fma")))
#define AVX512_TARGET	__attribute__((target("avx512f,avx2,fma")))

DEFINE_TERM_SUM(l2sq_avx2, AVX2_TARGET static, vec8f, 8, sum8, L2SQ_TERM)
DEFINE_TERM_SUM(l2sq_avx512, AVX512_TARGET static, vec16f, 16, sum16, L2SQ_TERM)
DEFINE_TERM_SUM(dot_avx2, AVX2_TARGET static, vec8f, 8, sum8, DOT_TERM)
DEFINE_TERM_SUM(dot_avx512, AVX512_TARGET static, vec16f, 16, sum16, DOT_TERM)
DEFINE_L2SQ_SQ8(l2sq_sq8_avx2, AVX2_TARGET static, vec8f, 8, sum8, widen8_avx2)
DEFINE_L2SQ_SQ8(l2sq_sq8_avx512, AVX512_TARGET static, vec16f, 16, sum16, widen16_avx512)
#endif

/*
 * The SQL operators' sums (distance.h, "in double"): sixteen partial sums,
 * the p-th adding the terms i = p (mod 16) of the first dims - dims % 16 in
 * order, then a fixed tree over the sixteen, then the last dims % 16 terms
 * in order.  Each variant holds the sixteen in vectors of the width its
 * registers take, so every variant adds the same numbers in the same order:
 * a product of two floats is exact in double, so the dot products and norms
 * come out bit for bit alike on every CPU; a square of a difference may be
 * fused into its add where the CPU has fused multiply-adds (the last bit of
 * an L2 sum).
 */
typedef double vec8d __attribute__((vector_size(64)));
typedef double vec4d __attribute__((vector_size(32)));
typedef double vec2d __attribute__((vector_size(16)));
typedef float vec2f __attribute__((vector_size(8)));

#define DOUBLE_PARTS 16

/* over the vectors of a pass, unrolled: the partial sums stay in registers */
#define FOR_EACH_PART(j, lanes) \
	_Pragma("GCC unroll 16") \
	for (j = 0; j < DOUBLE_PARTS / (lanes); j++)

/* lanes floats at p as doubles */
#define WIDEN_DOUBLE(ftype, dtype, p) \
	__builtin_convertvector(LOADV(ftype, (p)), dtype)

/* The sum of the sixteen partial sums held in vectors (of doubles) at v */
static inline double
sum_parts(const void *v, double *part)
{
	int			w,
				p;

	memcpy(part, v, sizeof(double) * DOUBLE_PARTS);
	for (w = DOUBLE_PARTS / 2; w >= 1; w /= 2)
		for (p = 0; p < w; p++)
			part[p] += part[p + w];
	return part[0];
}

/*
 * name(a, b, dims): sum(term(a[i], b[i])) (L2SQ_TERM, DOT_TERM);
 * cosine_name(a, b, dims, sums): sums = {a.b, a.a, b.b}
 */
#define DEFINE_DOUBLE_SUM(name, attrs, ftype, dtype, lanes, term) \
attrs double \
name(const float *a, const float *b, int dims) \
{ \
	dtype		s[DOUBLE_PARTS / (lanes)] = {{0}}; \
	double		part[DOUBLE_PARTS]; \
	double		sum; \
	int			i = 0, \
				j; \
 \
	for (; i + DOUBLE_PARTS <= dims; i += DOUBLE_PARTS) \
		FOR_EACH_PART(j, lanes) \
			s[j] += term(WIDEN_DOUBLE(ftype, dtype, a + i + j * (lanes)), \
						 WIDEN_DOUBLE(ftype, dtype, b + i + j * (lanes))); \
	sum = i > 0 ? sum_parts(s, part) : 0.0; \
	for (; i < dims; i++) \
		sum += term((double) a[i], (double) b[i]); \
	return sum; \
}

#define DEFINE_COSINE_SUMS(cosine_name, attrs, ftype, dtype, lanes) \
attrs void \
cosine_name(const float *a, const float *b, int dims, double *sums) \
{ \
	dtype		sab[DOUBLE_PARTS / (lanes)] = {{0}}, \
				saa[DOUBLE_PARTS / (lanes)] = {{0}}, \
				sbb[DOUBLE_PARTS / (lanes)] = {{0}}; \
	double		part[DOUBLE_PARTS]; \
	int			i = 0, \
				j; \
 \
	for (; i + DOUBLE_PARTS <= dims; i += DOUBLE_PARTS) \
		FOR_EACH_PART(j, lanes) \
		{ \
			dtype		x = WIDEN_DOUBLE(ftype, dtype, a + i + j * (lanes)), \
						y = WIDEN_DOUBLE(ftype, dtype, b + i + j * (lanes)); \
 \
			sab[j] += x * y; \
			saa[j] += x * x; \
			sbb[j] += y * y; \
		} \
	sums[0] = i > 0 ? sum_parts(sab, part) : 0.0; \
	sums[1] = i > 0 ? sum_parts(saa, part) : 0.0; \
	sums[2] = i > 0 ? sum_parts(sbb, part) : 0.0; \
	for (; i < dims; i++) \
	{ \
		sums[0] += (double) a[i] * (double) b[i]; \
		sums[1] += (double) a[i] * (double) a[i]; \
		sums[2] += (double) b[i] * (double) b[i]; \
	} \
}

DEFINE_DOUBLE_SUM(gateann_l2sq_double_scalar, , vec2f, vec2d, 2, L2SQ_TERM)
DEFINE_DOUBLE_SUM(gateann_dot_double_scalar, , vec2f, vec2d, 2, DOT_TERM)
DEFINE_COSINE_SUMS(gateann_cosine_sums_scalar, , vec2f, vec2d, 2)
#ifdef GATEANN_X86
DEFINE_DOUBLE_SUM(l2sq_double_avx2, AVX2_TARGET static, vec4f, vec4d, 4, L2SQ_TERM)
DEFINE_DOUBLE_SUM(dot_double_avx2, AVX2_TARGET static, vec4f, vec4d, 4, DOT_TERM)
DEFINE_COSINE_SUMS(cosine_sums_avx2, AVX2_TARGET static, vec4f, vec4d, 4)
DEFINE_DOUBLE_SUM(l2sq_double_avx512, AVX512_TARGET static, vec8f, vec8d, 8, L2SQ_TERM)
DEFINE_DOUBLE_SUM(dot_double_avx512, AVX512_TARGET static, vec8f, vec8d, 8, DOT_TERM)
DEFINE_COSINE_SUMS(cosine_sums_avx512, AVX512_TARGET static, vec8f, vec8d, 8)
#endif

#ifdef GATEANN_X86

/* ----------------------------------------------------------------
 * AVX2 + FMA
 * ----------------------------------------------------------------
 */
#define AVX2_FN __attribute__((target("avx2,fma")))
#define AVX2_INLINE static inline __attribute__((target("avx2,fma"), always_inline))

AVX2_INLINE float
hsum256(__m256 v)
{
	__m128		lo = _mm256_castps256_ps128(v);
	__m128		hi = _mm256_extractf128_ps(v, 1);
	__m128		s = _mm_add_ps(lo, hi);

	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* mask with the first r (0..8) lanes set, for _mm256_maskload_ps */
AVX2_INLINE __m256i
tailmask256(int r)
{
	const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

	return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), lanes);
}

/*
 * ADC with the AVX2 gather, 16 subspaces per step (two 8-lane gathers).
 * Measured (test/unit/bench.c, Sapphire Rapids): faster than the scalar loop
 * from m = 16 up (m=32: 7.5 vs 8.6 ns; m=16: 4.2 vs 6.0 ns), slower below,
 * so small m goes to the scalar loop.  Also faster there than 16-lane
 * AVX-512 gathers (m=16: 9.2 ns), so the AVX-512 set uses this one too.
 */
AVX2_FN static float
pq_adc_avx2(const float *table, const uint8_t *code, int m)
{
	const __m256i offs = _mm256_setr_epi32(0, PQ_K, 2 * PQ_K, 3 * PQ_K,
										   4 * PQ_K, 5 * PQ_K, 6 * PQ_K, 7 * PQ_K);
	__m256		acc0 = _mm256_setzero_ps();
	__m256		acc1 = _mm256_setzero_ps();
	float		tail = 0.0f;
	int			s = 0;

	if (m < 16)
		return gateann_pq_adc_scalar(table, code, m);

	for (; s + 16 <= m; s += 16)
	{
		__m128i		c = _mm_loadu_si128((const __m128i *) (code + s));
		__m256i		i0 = _mm256_add_epi32(_mm256_cvtepu8_epi32(c), offs);
		__m256i		i1 = _mm256_add_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(c, 8)), offs);

		acc0 = _mm256_add_ps(acc0, _mm256_i32gather_ps(table + (size_t) s * PQ_K, i0, 4));
		acc1 = _mm256_add_ps(acc1, _mm256_i32gather_ps(table + (size_t) (s + 8) * PQ_K, i1, 4));
	}
	for (; s < m; s++)
		tail += table[(size_t) s * PQ_K + code[s]];
	return hsum256(_mm256_add_ps(acc0, acc1)) + tail;
}

AVX2_INLINE __m256
pairsum256(__m256 a, __m256 b)
{
	return _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
}

/* per 128-bit lane L: the lane-L sums of a, b, c, d */
AVX2_INLINE __m256
quadsum256(__m256 a, __m256 b, __m256 c, __m256 d)
{
	__m256		p0 = pairsum256(a, b);
	__m256		p1 = pairsum256(c, d);

	return _mm256_add_ps(_mm256_shuffle_ps(p0, p1, _MM_SHUFFLE(1, 0, 1, 0)),
						 _mm256_shuffle_ps(p0, p1, _MM_SHUFFLE(3, 2, 3, 2)));
}

AVX2_INLINE __m256
pq_term256(__m256 c, __m256 xv, __m256 acc, int ip)
{
	if (ip)
		return _mm256_fmadd_ps(c, xv, acc);
	c = _mm256_sub_ps(c, xv);
	return _mm256_fmadd_ps(c, c, acc);
}

/* w == 4: two whole centroids per register */
AVX2_INLINE __m256
pair4_256(const float *cent, __m256 xp, int ip)
{
	__m256		c = _mm256_loadu_ps(cent);

	if (ip)
		return _mm256_mul_ps(c, xp);
	c = _mm256_sub_ps(c, xp);
	return _mm256_mul_ps(c, c);
}

/*
 * Distances (ip = 0: squared L2; ip = 1: dot product) from x to the 8
 * centroids starting at cent (each w floats wide), lane i = centroid i.
 */
AVX2_INLINE __m256
block8_avx2(const float *cent, const float *x, int w, int ip)
{
	__m256		v0, v1, v2, v3, v4, v5, v6, v7;
	__m256		y0, y1;
	int			j = 0;

	if (w == 4)
	{
		__m256		xp = _mm256_broadcast_ps((const __m128 *) x);
		__m256		y = quadsum256(pair4_256(cent, xp, ip), pair4_256(cent + 8, xp, ip),
								   pair4_256(cent + 16, xp, ip), pair4_256(cent + 24, xp, ip));

		/* lane 4*L + k of y is centroid 2*k + L */
		return _mm256_permutevar8x32_ps(y, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
	}

	v0 = v1 = v2 = v3 = v4 = v5 = v6 = v7 = _mm256_setzero_ps();

#define PQ256_STEP(LOAD) \
	do { \
		v0 = pq_term256(LOAD(0), xv, v0, ip); \
		v1 = pq_term256(LOAD(1), xv, v1, ip); \
		v2 = pq_term256(LOAD(2), xv, v2, ip); \
		v3 = pq_term256(LOAD(3), xv, v3, ip); \
		v4 = pq_term256(LOAD(4), xv, v4, ip); \
		v5 = pq_term256(LOAD(5), xv, v5, ip); \
		v6 = pq_term256(LOAD(6), xv, v6, ip); \
		v7 = pq_term256(LOAD(7), xv, v7, ip); \
	} while (0)
#define PQ256_FULL(i) _mm256_loadu_ps(cent + (size_t) (i) * w + j)
#define PQ256_MASKED(i) _mm256_maskload_ps(cent + (size_t) (i) * w + j, mk)

	for (; j + 8 <= w; j += 8)
	{
		__m256		xv = _mm256_loadu_ps(x + j);

		PQ256_STEP(PQ256_FULL);
	}
	if (j < w)
	{
		__m256i		mk = tailmask256(w - j);
		__m256		xv = _mm256_maskload_ps(x + j, mk);

		PQ256_STEP(PQ256_MASKED);
	}
#undef PQ256_STEP
#undef PQ256_FULL
#undef PQ256_MASKED

	y0 = quadsum256(v0, v1, v2, v3);
	y1 = quadsum256(v4, v5, v6, v7);
	return _mm256_add_ps(_mm256_permute2f128_ps(y0, y1, 0x20),
						 _mm256_permute2f128_ps(y0, y1, 0x31));
}

AVX2_FN static int
pq_nearest_avx2(const float *centroids, const float *x, int w, float *dist)
{
	__m256		best = _mm256_set1_ps(FLT_MAX);
	__m256i		bidx = _mm256_setzero_si256();
	__m256i		cur = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	const __m256i eight = _mm256_set1_epi32(8);
	float		bd[8];
	int			bi[8];
	int			c,
				r;
	float		rd;

	for (c = 0; c < PQ_K; c += 8)
	{
		__m256		d = block8_avx2(centroids + (size_t) c * w, x, w, 0);
		__m256		lt = _mm256_cmp_ps(d, best, _CMP_LT_OQ);

		best = _mm256_blendv_ps(best, d, lt);
		bidx = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(bidx),
													_mm256_castsi256_ps(cur), lt));
		cur = _mm256_add_epi32(cur, eight);
	}
	_mm256_storeu_ps(bd, best);
	_mm256_storeu_si256((__m256i *) bi, bidx);
	r = bi[0];
	rd = bd[0];
	for (c = 1; c < 8; c++)
	{
		if (bd[c] < rd || (bd[c] == rd && bi[c] < r))
		{
			rd = bd[c];
			r = bi[c];
		}
	}
	if (dist)
		*dist = rd;
	return r;
}

AVX2_FN static void
pq_l2_table_avx2(const float *centroids, const float *x, int w, float *out)
{
	int			c;

	for (c = 0; c < PQ_K; c += 8)
		_mm256_storeu_ps(out + c, block8_avx2(centroids + (size_t) c * w, x, w, 0));
}

AVX2_FN static void
pq_ip_table_avx2(const float *centroids, const float *x, int w, float *out)
{
	const __m256 neg = _mm256_set1_ps(-0.0f);
	int			c;

	for (c = 0; c < PQ_K; c += 8)
		_mm256_storeu_ps(out + c,
						 _mm256_xor_ps(block8_avx2(centroids + (size_t) c * w, x, w, 1), neg));
}

/* ----------------------------------------------------------------
 * AVX-512F
 * ----------------------------------------------------------------
 */
/* the AVX-512 set also requires AVX2+FMA (every AVX-512F CPU has them) */
#define AVX512_FN __attribute__((target("avx512f,avx2,fma")))
#define AVX512_INLINE static inline __attribute__((target("avx512f,avx2,fma"), always_inline))

AVX512_INLINE __mmask16
tailmask512(int r)
{
	return (__mmask16) ((1u << r) - 1u);
}

AVX512_FN static float
pq_adc_avx512_gather(const float *table, const uint8_t *code, int m)
{
	const __m512i offs = _mm512_setr_epi32(0, PQ_K, 2 * PQ_K, 3 * PQ_K,
										   4 * PQ_K, 5 * PQ_K, 6 * PQ_K, 7 * PQ_K,
										   8 * PQ_K, 9 * PQ_K, 10 * PQ_K, 11 * PQ_K,
										   12 * PQ_K, 13 * PQ_K, 14 * PQ_K, 15 * PQ_K);
	__m512		acc0 = _mm512_setzero_ps();
	__m512		acc1 = _mm512_setzero_ps();
	float		tail = 0.0f;
	int			s = 0;

	for (; s + 32 <= m; s += 32)
	{
		__m512i		i0 = _mm512_add_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (code + s))), offs);
		__m512i		i1 = _mm512_add_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (code + s + 16))), offs);

		acc0 = _mm512_add_ps(acc0, _mm512_i32gather_ps(i0, table + (size_t) s * PQ_K, 4));
		acc1 = _mm512_add_ps(acc1, _mm512_i32gather_ps(i1, table + (size_t) (s + 16) * PQ_K, 4));
	}
	for (; s + 16 <= m; s += 16)
	{
		__m512i		i0 = _mm512_add_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (code + s))), offs);

		acc0 = _mm512_add_ps(acc0, _mm512_i32gather_ps(i0, table + (size_t) s * PQ_K, 4));
	}
	for (; s < m; s++)
		tail += table[(size_t) s * PQ_K + code[s]];
	return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + tail;
}

/*
 * Two vectors -> per 128-bit lane [a0+a2, b0+b2, a1+a3, b1+b3]; two of
 * those -> per 128-bit lane L the lane-L sums of four vectors.
 */
AVX512_INLINE __m512
pairsum512(__m512 a, __m512 b)
{
	return _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
}

AVX512_INLINE __m512
quadsum512(__m512 a, __m512 b, __m512 c, __m512 d)
{
	__m512		p0 = pairsum512(a, b);
	__m512		p1 = pairsum512(c, d);

	return _mm512_add_ps(_mm512_shuffle_ps(p0, p1, _MM_SHUFFLE(1, 0, 1, 0)),
						 _mm512_shuffle_ps(p0, p1, _MM_SHUFFLE(3, 2, 3, 2)));
}

/*
 * 16 vectors -> one vector whose lane i is the horizontal sum of vector i.
 * (Passed by value and always inlined so everything stays in registers.)
 */
AVX512_INLINE __m512
reduce16_512(__m512 v0, __m512 v1, __m512 v2, __m512 v3,
			 __m512 v4, __m512 v5, __m512 v6, __m512 v7,
			 __m512 v8, __m512 v9, __m512 v10, __m512 v11,
			 __m512 v12, __m512 v13, __m512 v14, __m512 v15)
{
	__m512		y0 = quadsum512(v0, v1, v2, v3);
	__m512		y1 = quadsum512(v4, v5, v6, v7);
	__m512		y2 = quadsum512(v8, v9, v10, v11);
	__m512		y3 = quadsum512(v12, v13, v14, v15);
	__m512		z0 = _mm512_add_ps(_mm512_shuffle_f32x4(y0, y1, _MM_SHUFFLE(2, 0, 2, 0)),
								   _mm512_shuffle_f32x4(y0, y1, _MM_SHUFFLE(3, 1, 3, 1)));
	__m512		z1 = _mm512_add_ps(_mm512_shuffle_f32x4(y2, y3, _MM_SHUFFLE(2, 0, 2, 0)),
								   _mm512_shuffle_f32x4(y2, y3, _MM_SHUFFLE(3, 1, 3, 1)));

	return _mm512_add_ps(_mm512_shuffle_f32x4(z0, z1, _MM_SHUFFLE(2, 0, 2, 0)),
						 _mm512_shuffle_f32x4(z0, z1, _MM_SHUFFLE(3, 1, 3, 1)));
}

/*
 * 4 vectors, each holding four 4-float groups (one per 128-bit lane), ->
 * one vector whose lane i is the sum of group i (group g of q[k] is number
 * 4*k + g).
 */
AVX512_INLINE __m512
reduce_quads_512(__m512 q0, __m512 q1, __m512 q2, __m512 q3)
{
	const __m512i perm = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13,
										   2, 6, 10, 14, 3, 7, 11, 15);

	/* lane 4*L + k of the quad sum is group 4*k + L */
	return _mm512_permutexvar_ps(perm, quadsum512(q0, q1, q2, q3));
}

AVX512_INLINE __m512
pq_term512(__m512 c, __m512 xv, __m512 acc, int ip)
{
	if (ip)
		return _mm512_fmadd_ps(c, xv, acc);
	else
	{
		__m512		d = _mm512_sub_ps(c, xv);

		return _mm512_fmadd_ps(d, d, acc);
	}
}

/* w == 4: 4 centroids per register, one per 128-bit lane */
AVX512_INLINE __m512
quad4_512(const float *cent, __m512 xp, int ip)
{
	__m512		c = _mm512_loadu_ps(cent);

	if (ip)
		return _mm512_mul_ps(c, xp);
	c = _mm512_sub_ps(c, xp);
	return _mm512_mul_ps(c, c);
}

/* w == 8: 2 centroids per register; fold the two halves of each centroid */
AVX512_INLINE __m512
quad8_512(const float *cent, __m512 xp, int ip)
{
	__m512		a = _mm512_loadu_ps(cent);
	__m512		b = _mm512_loadu_ps(cent + 16);

	if (ip)
	{
		a = _mm512_mul_ps(a, xp);
		b = _mm512_mul_ps(b, xp);
	}
	else
	{
		a = _mm512_sub_ps(a, xp);
		b = _mm512_sub_ps(b, xp);
		a = _mm512_mul_ps(a, a);
		b = _mm512_mul_ps(b, b);
	}
	return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
						 _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* squared differences or products of one packed register */
AVX512_INLINE __m512
pq_elem512(__m512 c, __m512 xp, int ip)
{
	if (ip)
		return _mm512_mul_ps(c, xp);
	c = _mm512_sub_ps(c, xp);
	return _mm512_mul_ps(c, c);
}

/* w < 4: 4 centroids zero-padded to 4 floats, one per 128-bit lane */
AVX512_INLINE __m512
packed4_512(const float *cent, int w, __m128i mk, __m512 xp, int ip)
{
	__m512		c = _mm512_castps128_ps512(_mm_maskload_ps(cent, mk));

	c = _mm512_insertf32x4(c, _mm_maskload_ps(cent + w, mk), 1);
	c = _mm512_insertf32x4(c, _mm_maskload_ps(cent + 2 * w, mk), 2);
	c = _mm512_insertf32x4(c, _mm_maskload_ps(cent + 3 * w, mk), 3);
	return pq_elem512(c, xp, ip);
}

/* two centroids (w < 8 floats each, zero-padded to 8) in one register */
AVX512_INLINE __m512
load2x8_512(const float *c0, const float *c1, __m256i mk)
{
	__m512d		lo = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_maskload_ps(c0, mk)));

	return _mm512_castpd_ps(_mm512_insertf64x4(lo, _mm256_castps_pd(_mm256_maskload_ps(c1, mk)), 1));
}

/* 4 < w < 8: 4 centroids zero-padded to 8 floats, folded to one quad each */
AVX512_INLINE __m512
packed8_512(const float *cent, int w, __m256i mk, __m512 xp, int ip)
{
	__m512		a = pq_elem512(load2x8_512(cent, cent + w, mk), xp, ip);
	__m512		b = pq_elem512(load2x8_512(cent + 2 * w, cent + 3 * w, mk), xp, ip);

	return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
						 _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}

/*
 * Distances (ip = 0: squared L2; ip = 1: dot product) from x to the 16
 * centroids starting at cent (each w floats wide), lane i = centroid i.
 */
AVX512_INLINE __m512
block16_avx512(const float *cent, const float *x, int w, int ip)
{
	__m512		v0, v1, v2, v3, v4, v5, v6, v7,
				v8, v9, v10, v11, v12, v13, v14, v15;
	int			j = 0;

	if (w == 4)
	{
		__m512		xp = _mm512_broadcast_f32x4(_mm_loadu_ps(x));

		return reduce_quads_512(quad4_512(cent, xp, ip), quad4_512(cent + 16, xp, ip),
								quad4_512(cent + 32, xp, ip), quad4_512(cent + 48, xp, ip));
	}
	if (w == 8)
	{
		__m512		xp = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(x))));

		return reduce_quads_512(quad8_512(cent, xp, ip), quad8_512(cent + 32, xp, ip),
								quad8_512(cent + 64, xp, ip), quad8_512(cent + 96, xp, ip));
	}
	if (w < 4)
	{
		/* zero-pad each centroid to 4 floats, then as w == 4 */
		__m128i		mk = _mm_cmpgt_epi32(_mm_set1_epi32(w), _mm_setr_epi32(0, 1, 2, 3));
		__m512		xp = _mm512_broadcast_f32x4(_mm_maskload_ps(x, mk));

		return reduce_quads_512(packed4_512(cent, w, mk, xp, ip),
								packed4_512(cent + 4 * w, w, mk, xp, ip),
								packed4_512(cent + 8 * w, w, mk, xp, ip),
								packed4_512(cent + 12 * w, w, mk, xp, ip));
	}
	if (w < 8)
	{
		/* zero-pad each centroid to 8 floats, then as w == 8 */
		__m256i		mk = tailmask256(w);
		__m512		xp = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_maskload_ps(x, mk))));

		return reduce_quads_512(packed8_512(cent, w, mk, xp, ip),
								packed8_512(cent + 4 * w, w, mk, xp, ip),
								packed8_512(cent + 8 * w, w, mk, xp, ip),
								packed8_512(cent + 12 * w, w, mk, xp, ip));
	}

	v0 = v1 = v2 = v3 = v4 = v5 = v6 = v7 = _mm512_setzero_ps();
	v8 = v9 = v10 = v11 = v12 = v13 = v14 = v15 = _mm512_setzero_ps();

#define PQ512_STEP(LOAD) \
	do { \
		v0 = pq_term512(LOAD(0), xv, v0, ip); \
		v1 = pq_term512(LOAD(1), xv, v1, ip); \
		v2 = pq_term512(LOAD(2), xv, v2, ip); \
		v3 = pq_term512(LOAD(3), xv, v3, ip); \
		v4 = pq_term512(LOAD(4), xv, v4, ip); \
		v5 = pq_term512(LOAD(5), xv, v5, ip); \
		v6 = pq_term512(LOAD(6), xv, v6, ip); \
		v7 = pq_term512(LOAD(7), xv, v7, ip); \
		v8 = pq_term512(LOAD(8), xv, v8, ip); \
		v9 = pq_term512(LOAD(9), xv, v9, ip); \
		v10 = pq_term512(LOAD(10), xv, v10, ip); \
		v11 = pq_term512(LOAD(11), xv, v11, ip); \
		v12 = pq_term512(LOAD(12), xv, v12, ip); \
		v13 = pq_term512(LOAD(13), xv, v13, ip); \
		v14 = pq_term512(LOAD(14), xv, v14, ip); \
		v15 = pq_term512(LOAD(15), xv, v15, ip); \
	} while (0)
#define PQ512_FULL(i) _mm512_loadu_ps(cent + (size_t) (i) * w + j)
#define PQ512_MASKED(i) _mm512_maskz_loadu_ps(mk, cent + (size_t) (i) * w + j)

	for (; j + 16 <= w; j += 16)
	{
		__m512		xv = _mm512_loadu_ps(x + j);

		PQ512_STEP(PQ512_FULL);
	}
	if (j < w)
	{
		__mmask16	mk = tailmask512(w - j);
		__m512		xv = _mm512_maskz_loadu_ps(mk, x + j);

		PQ512_STEP(PQ512_MASKED);
	}
#undef PQ512_STEP
#undef PQ512_FULL
#undef PQ512_MASKED

	return reduce16_512(v0, v1, v2, v3, v4, v5, v6, v7,
						v8, v9, v10, v11, v12, v13, v14, v15);
}

AVX512_FN static int
pq_nearest_avx512(const float *centroids, const float *x, int w, float *dist)
{
	__m512		best = _mm512_set1_ps(FLT_MAX);
	__m512i		bidx = _mm512_setzero_si512();
	__m512i		cur = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7,
										8, 9, 10, 11, 12, 13, 14, 15);
	const __m512i sixteen = _mm512_set1_epi32(16);
	float		mind;
	__mmask16	eq;
	int			c;

	for (c = 0; c < PQ_K; c += 16)
	{
		__m512		d = block16_avx512(centroids + (size_t) c * w, x, w, 0);
		__mmask16	lt = _mm512_cmp_ps_mask(d, best, _CMP_LT_OQ);

		best = _mm512_mask_mov_ps(best, lt, d);
		bidx = _mm512_mask_mov_epi32(bidx, lt, cur);
		cur = _mm512_add_epi32(cur, sixteen);
	}
	mind = _mm512_reduce_min_ps(best);
	eq = _mm512_cmp_ps_mask(best, _mm512_set1_ps(mind), _CMP_EQ_OQ);
	if (dist)
		*dist = mind;
	if (eq == 0)
		return 0;				/* only NaNs */
	return _mm512_mask_reduce_min_epi32(eq, bidx);
}

AVX512_FN static void
pq_l2_table_avx512(const float *centroids, const float *x, int w, float *out)
{
	int			c;

	for (c = 0; c < PQ_K; c += 16)
		_mm512_storeu_ps(out + c, block16_avx512(centroids + (size_t) c * w, x, w, 0));
}

AVX512_FN static void
pq_ip_table_avx512(const float *centroids, const float *x, int w, float *out)
{
	int			c;

	for (c = 0; c < PQ_K; c += 16)
	{
		__m512		d = block16_avx512(centroids + (size_t) c * w, x, w, 1);

		_mm512_storeu_ps(out + c, _mm512_sub_ps(_mm512_setzero_ps(), d));
	}
}

#endif							/* GATEANN_X86 */

/* ----------------------------------------------------------------
 * Dispatch
 * ----------------------------------------------------------------
 */

float		(*gateann_l2sq) (const float *a, const float *b, int dims) = gateann_l2sq_scalar;
float		(*gateann_dot) (const float *a, const float *b, int dims) = gateann_dot_scalar;
float		(*gateann_pq_adc) (const float *table, const uint8_t *code, int m) = gateann_pq_adc_scalar;
int			(*gateann_pq_nearest) (const float *centroids, const float *x, int w,
								   float *dist) = gateann_pq_nearest_scalar;
void		(*gateann_pq_l2_table) (const float *centroids, const float *x, int w,
									float *out) = gateann_pq_l2_table_scalar;
void		(*gateann_pq_ip_table) (const float *centroids, const float *x, int w,
									float *out) = gateann_pq_ip_table_scalar;
float		(*gateann_l2sq_sq8) (const float *qt, const uint8_t *code, const float *step,
								 int dims) = gateann_l2sq_sq8_scalar;
double		(*gateann_l2sq_double) (const float *a, const float *b, int dims) =
gateann_l2sq_double_scalar;
double		(*gateann_dot_double) (const float *a, const float *b, int dims) =
gateann_dot_double_scalar;
void		(*gateann_cosine_sums) (const float *a, const float *b, int dims, double *sums) =
gateann_cosine_sums_scalar;

static const char *gateann_impl_name = "scalar";

int
gateann_distance_kernels(const char *impl, GateannDistanceKernels *out)
{
	if (strcmp(impl, "scalar") == 0)
	{
		out->l2sq = gateann_l2sq_scalar;
		out->dot = gateann_dot_scalar;
		out->pq_adc = gateann_pq_adc_scalar;
		out->pq_nearest = gateann_pq_nearest_scalar;
		out->pq_l2_table = gateann_pq_l2_table_scalar;
		out->pq_ip_table = gateann_pq_ip_table_scalar;
		out->l2sq_sq8 = gateann_l2sq_sq8_scalar;
		out->l2sq_double = gateann_l2sq_double_scalar;
		out->dot_double = gateann_dot_double_scalar;
		out->cosine_sums = gateann_cosine_sums_scalar;
		return 1;
	}
#ifdef GATEANN_X86
	__builtin_cpu_init();
	if (strcmp(impl, "avx512") == 0 && __builtin_cpu_supports("avx512f") &&
		__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
	{
		out->l2sq = l2sq_avx512;
		out->dot = dot_avx512;
		out->pq_adc = pq_adc_avx2;	/* see pq_adc_avx2 */
		out->pq_nearest = pq_nearest_avx512;
		out->pq_l2_table = pq_l2_table_avx512;
		out->pq_ip_table = pq_ip_table_avx512;
		out->l2sq_sq8 = l2sq_sq8_avx512;
		out->l2sq_double = l2sq_double_avx512;
		out->dot_double = dot_double_avx512;
		out->cosine_sums = cosine_sums_avx512;
		return 1;
	}
	if (strcmp(impl, "avx2") == 0 &&
		__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
	{
		out->l2sq = l2sq_avx2;
		out->dot = dot_avx2;
		out->pq_adc = pq_adc_avx2;
		out->pq_nearest = pq_nearest_avx2;
		out->pq_l2_table = pq_l2_table_avx2;
		out->pq_ip_table = pq_ip_table_avx2;
		out->l2sq_sq8 = l2sq_sq8_avx2;
		out->l2sq_double = l2sq_double_avx2;
		out->dot_double = dot_double_avx2;
		out->cosine_sums = cosine_sums_avx2;
		return 1;
	}
	/* benchmark-only variant: ADC with 16-lane AVX-512 gathers */
	if (strcmp(impl, "avx512-gather") == 0 && gateann_distance_kernels("avx512", out))
	{
		out->pq_adc = pq_adc_avx512_gather;
		return 1;
	}
#endif
	return 0;
}

void
gateann_distance_init(void)
{
	const char *force = getenv("GATEANN_FORCE_SCALAR");
	GateannDistanceKernels k;
	const char *impl = "scalar";

	if (force == NULL || strcmp(force, "1") != 0)
	{
		if (gateann_distance_kernels("avx512", &k))
			impl = "avx512";
		else if (gateann_distance_kernels("avx2", &k))
			impl = "avx2";
	}
	if (strcmp(impl, "scalar") == 0)
		gateann_distance_kernels("scalar", &k);

	gateann_l2sq = k.l2sq;
	gateann_dot = k.dot;
	gateann_pq_adc = k.pq_adc;
	gateann_pq_nearest = k.pq_nearest;
	gateann_pq_l2_table = k.pq_l2_table;
	gateann_pq_ip_table = k.pq_ip_table;
	gateann_l2sq_sq8 = k.l2sq_sq8;
	gateann_l2sq_double = k.l2sq_double;
	gateann_dot_double = k.dot_double;
	gateann_cosine_sums = k.cosine_sums;
	gateann_impl_name = impl;
}

const char *
gateann_distance_impl(void)
{
	return gateann_impl_name;
}
