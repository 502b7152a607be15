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

/* ----------------------------------------------------------------
 * Kernels written once: l2sq and dot are one body, the 8-bit code
 * distance another, in GCC/Clang vector extensions, instantiated per
 * instruction set with vectors of its register width (with 16-float
 * vectors the AVX2 8-bit kernel took 173 ns for 384 dimensions, with
 * 8-float ones 30).  Only the widening of bytes to floats is written per
 * set: compilers convert a byte vector one lane at a time.
 * As fast as the hand-written kernels they replaced (test/unit bench, ns
 * per call, before / after: AVX2 l2sq 128d 7.69 / 7.62, 768d 42.8 / 43.1;
 * AVX-512 8.03 / 7.90, 45.1 / 45.2).  The PQ tables and nearest centroids
 * further down are written once too (their figures there); pq_adc is not:
 * a gather has no vector-extension form.
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

/* ----------------------------------------------------------------
 * PQ subspace kernels (distance.h): the distances from x to a subspace's
 * 256 centroids, `lanes` centroids at a time, lane i of a block's vector
 * holding centroid i's.  One body for every instruction set, as above.
 *
 * w a power of two up to the vector's width (the default codes' 4 among
 * them): a block's lanes * w floats are w whole vectors, each holding
 * lanes / w centroids' terms against x repeated across the vector; adding
 * adjacent lanes log2(w) times leaves the block's distances.  w between a
 * quarter and half the width (1,536 dimensions' 6 with 16 lanes): the
 * same with two centroids to a vector, each padded to half of it.  Any
 * other w (a coarse quantizer's dims): one vector sum per centroid over
 * x's whole vectors, the centroids in the inner loop (their adds do not
 * wait on each other), then the rest of each centroid loaded whole with
 * its lanes past the end zeroed; adding adjacent lanes log2(lanes) times
 * turns the lanes sums into the block's distances.
 * Against the kernels written per set they replaced (test/unit bench, an
 * AMD EPYC with AVX-512, ns a call, medians of four runs, before / after):
 * AVX-512 l2 table and nearest w = 4 34.4 / 23.3, 53.6 / 42.3; w = 6
 * 92.3 / 66.9, 110.2 / 85.0; w = 128 1,086 / 1,055, 1,075 / 1,036; AVX2
 * w = 4 41.9 / 42.4, 100.6 / 54.8; w = 16 137.3 / 134.5, 177.8 / 145.7;
 * every other width and set as fast or faster; the baseline set 2-8x
 * faster at every w.
 * ----------------------------------------------------------------
 */
typedef int32_t vec4i __attribute__((vector_size(16)));
typedef int32_t vec8i __attribute__((vector_size(32)));
typedef int32_t vec16i __attribute__((vector_size(64)));

/*
 * Adjacent lanes added within each 128-bit part of the vectors (one shuffle
 * instruction each way; across parts a shuffle of lanes takes three), two
 * levels of it; then adjacent parts added, the rest of the way.  The sums
 * come out in an order of their own, which the same network run on
 * centroid numbers tells (PQ_BLOCK_ORDER) and one permutation a block
 * undoes.  (Two levels within parts: a centroid's terms either lie in one
 * part or fill whole parts, and after two levels each part holds one sum
 * of four centroids, every part of a vector the same four.)
 */
#define EVEN_LANES_4	0, 2, 4, 6
#define ODD_LANES_4		1, 3, 5, 7
#define EVEN_LANES_8	0, 2, 8, 10, 4, 6, 12, 14
#define ODD_LANES_8		1, 3, 9, 11, 5, 7, 13, 15
#define EVEN_LANES_16	0, 2, 16, 18, 4, 6, 20, 22, 8, 10, 24, 26, 12, 14, 28, 30
#define ODD_LANES_16	1, 3, 17, 19, 5, 7, 21, 23, 9, 11, 25, 27, 13, 15, 29, 31
#define EVEN_PARTS_4	0, 1, 2, 3	/* (one part: never used) */
#define ODD_PARTS_4		4, 5, 6, 7
#define EVEN_PARTS_8	0, 1, 2, 3, 8, 9, 10, 11
#define ODD_PARTS_8		4, 5, 6, 7, 12, 13, 14, 15
#define EVEN_PARTS_16	0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27
#define ODD_PARTS_16	4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31

#ifdef __clang__
#define SHUFFLE2(a, b, itype, ...) __builtin_shufflevector((a), (b), __VA_ARGS__)
#else
#define SHUFFLE2(a, b, itype, ...) __builtin_shuffle((a), (b), (itype) {__VA_ARGS__})
#endif

/*
 * a, b -> {a0 + a1, a2 + a3, b0 + b1, b2 + b3} in each part (level < 2),
 * else {a's parts 0 + 1, 2 + 3, ..., b's parts 0 + 1, ...}; or, on
 * centroid numbers (FIRSTS), the first of each such pair
 */
#define ADJACENT_SUMS(a, b, level, itype, lanes) \
	((level) < 2 ? \
	 SHUFFLE2(a, b, itype, EVEN_LANES_##lanes) + SHUFFLE2(a, b, itype, ODD_LANES_##lanes) : \
	 SHUFFLE2(a, b, itype, EVEN_PARTS_##lanes) + SHUFFLE2(a, b, itype, ODD_PARTS_##lanes))
#define ADJACENT_FIRSTS(a, b, level, itype, lanes) \
	((level) < 2 ? SHUFFLE2(a, b, itype, EVEN_LANES_##lanes) : \
	 SHUFFLE2(a, b, itype, EVEN_PARTS_##lanes))

/*
 * v[0..n-1], n a power of two up to 16 -> v[0]: combine(v[2k], v[2k + 1])
 * log2(n) times (written out level by level: every index a constant, so
 * that the vectors stay in registers)
 */
#define REDUCE_LEVEL(v, h, level, combine, itype, lanes) \
	do { \
		int			level_k_; \
 \
		_Pragma("GCC unroll 16") \
		for (level_k_ = 0; level_k_ < (h); level_k_++) \
			(v)[level_k_] = combine((v)[2 * level_k_], (v)[2 * level_k_ + 1], level, itype, lanes); \
	} while (0)
#define REDUCE_ADJACENT(v, n, combine, itype, lanes) \
	do { \
		if ((n) >= 2) \
			REDUCE_LEVEL(v, (n) / 2, 0, combine, itype, lanes); \
		if ((n) >= 4) \
			REDUCE_LEVEL(v, (n) / 4, 1, combine, itype, lanes); \
		if ((n) >= 8) \
			REDUCE_LEVEL(v, (n) / 8, 2, combine, itype, lanes); \
		if ((n) >= 16) \
			REDUCE_LEVEL(v, (n) / 16, 3, combine, itype, lanes); \
	} while (0)

/* a centroid's term against x: squared difference (ip = 0) or product */
#define PQ_TERM(c, xv, ip) ((ip) ? (c) * (xv) : L2SQ_TERM(c, xv))

/* d's lanes in the order idx gives: {d[idx[0]], d[idx[1]], ...} */
#ifdef __clang__
#define PERMUTE(d, idx, vtype, lanes) \
	({ vtype r_; int q_; for (q_ = 0; q_ < (lanes); q_++) r_[q_] = (d)[(idx)[q_]]; r_; })
#else
#define PERMUTE(d, idx, vtype, lanes) __builtin_shuffle((d), (idx))
#endif

/*
 * {f(0, a), f(1, a), ..., f(lanes - 1, a)}: a vector built in registers.
 * A loop storing lane after lane leaves it in memory, and the vector load
 * that reads it back waits until those stores, and so every instruction
 * before them, have retired: a call could not start before the previous
 * one had finished (AVX-512, w = 6: nearest 123 -> 87 ns a call, table 91
 * -> 69).  Only a loop a compiler turns into one load stays a loop.
 */
#define LANES_4(f, a)	{f(0, a), f(1, a), f(2, a), f(3, a)}
#define LANES_8(f, a)	{f(0, a), f(1, a), f(2, a), f(3, a), f(4, a), f(5, a), f(6, a), f(7, a)}
#define LANES_16(f, a) \
	{f(0, a), f(1, a), f(2, a), f(3, a), f(4, a), f(5, a), f(6, a), f(7, a), \
	 f(8, a), f(9, a), f(10, a), f(11, a), f(12, a), f(13, a), f(14, a), f(15, a)}
#define LANES(f, a, lanes) LANES_##lanes(f, a)
#define LANE_NUMBER(l, unused) (l)
/* x's w floats once in every P lanes, each last one again past w (masked) */
#define X_REPEATED_W(l, P) x[(l) % (P) < w ? (l) % (P) : w - 1]
/* x's rest: the floats from full_ (its last float past them, masked) */
#define X_REST(l, unused) x[(l) < rest_ ? full_ + (l) : w_ - 1]

/*
 * Where the network leaves a block's centroids: id = their numbers lane
 * by lane, inv the way back.  n vectors, per floats to a centroid.
 */
#define PQ_BLOCK_ORDER(n, per, itype, lanes) \
	do { \
		static itype order_id_, \
					order_inv_; \
		static int	order_known_ = 0; \
		itype		iv_[16]; \
		int			order_k_; \
 \
		if (!order_known_) \
		{ \
			for (order_k_ = 0; order_k_ < (n); order_k_++) \
				for (l = 0; l < (lanes); l++) \
					iv_[order_k_][l] = (order_k_ * (lanes) + l) / (per); \
			REDUCE_ADJACENT(iv_, n, ADJACENT_FIRSTS, itype, lanes); \
			order_id_ = iv_[0]; \
			for (l = 0; l < (lanes); l++) \
				order_inv_[order_id_[l]] = l; \
			order_known_ = 1; \
		} \
		id = order_id_; \
		inv = order_inv_; \
	} while (0)

/*
 * A block's distances d (centroids c..c + lanes - 1, in the network's
 * order) into out, in order, the dot products negated as the table holds
 * them (four lanes are one 128-bit part: in order already); or into the
 * running nearest, each lane keeping the first of its best
 */
#define PQ_TAKE(d, c, vtype, itype, lanes) \
	do { \
		if (out) \
		{ \
			vtype		o_ = ip ? -(d) : (d); \
 \
			if ((lanes) > 4) \
				o_ = PERMUTE(o_, inv, vtype, lanes); \
			memcpy(out + (c), &o_, sizeof(o_)); \
		} \
		else \
		{ \
			PQ_KEEP_WHERE((d) < best, best, best_id, d, id, itype); \
			id += (lanes);		/* (the blocks come in order) */ \
		} \
	} while (0)

/* best, best_id = d, d_id in the lanes where the mask `less` is set */
#define PQ_KEEP_WHERE(less, best, best_id, d, d_id, itype) \
	do { \
		itype		lt_ = (less); \
 \
		(best) = (__typeof__(best)) (((itype) (d) & lt_) | ((itype) (best) & ~lt_)); \
		(best_id) = ((d_id) & lt_) | ((best_id) & ~lt_); \
	} while (0)

/* Every block for a w of P, a power of two no wider than the vector */
#define PQ_PACKED_ALL(P, vtype, itype, lanes) \
	do { \
		vtype		xr_; \
		int			k_; \
 \
		PQ_BLOCK_ORDER(P, P, itype, lanes); \
		/* (a compiler loads this loop's x with one broadcast) */ \
		for (l = 0; l < (lanes); l++) \
			xr_[l] = x[l % (P)]; \
		for (c = 0; c < PQ_K; c += (lanes)) \
		{ \
			_Pragma("GCC unroll 16") \
			for (k_ = 0; k_ < (P); k_++) \
				v[k_] = PQ_TERM(LOADV(vtype, cent + (size_t) c * (P) + k_ * (lanes)), xr_, ip); \
			REDUCE_ADJACENT(v, P, ADJACENT_SUMS, itype, lanes); \
			PQ_TAKE(v[0], c, vtype, itype, lanes); \
		} \
	} while (0)

/*
 * Every block for P / 2 < w < P, P half the vector: two centroids to a
 * vector, one load from the first moved into place, the second's floats
 * to the upper half (the last pair loaded to end at its own end), lanes
 * past w in each half zeroed; then as for a w of P
 */
#define PQ_PADDED_BLOCK(P, last, vtype, itype, lanes) \
	do { \
		const float *blk_ = cent + (size_t) c * w; \
		int			k_; \
 \
		_Pragma("GCC unroll 16") \
		for (k_ = 0; k_ < (P); k_++) \
		{ \
			vtype		cv_; \
 \
			if (!(last) || k_ < (P) - 1) \
				cv_ = PERMUTE(LOADV(vtype, blk_ + (size_t) (2 * k_) * w), pair_, vtype, lanes); \
			else \
				cv_ = PERMUTE(LOADV(vtype, blk_ + (size_t) (2 * k_ + 2) * w - (lanes)), \
							  last_pair_, vtype, lanes); \
			cv_ = (vtype) ((itype) cv_ & keep_); \
			v[k_] = PQ_TERM(cv_, xr_, ip); \
		} \
		REDUCE_ADJACENT(v, P, ADJACENT_SUMS, itype, lanes); \
		PQ_TAKE(v[0], c, vtype, itype, lanes); \
	} while (0)

#define PQ_PADDED_ALL(P, vtype, itype, lanes) \
	do { \
		itype		lane_ = (itype) LANES(LANE_NUMBER, 0, lanes), \
					upper_ = lane_ >= (P), \
					keep_ = (lane_ & ((P) - 1)) < w, \
					pair_ = lane_ + (upper_ & (w - (P))), \
					last_pair_ = (pair_ + (lanes) - 2 * w) & ((lanes) - 1); \
		vtype		xr_ = (vtype) ((itype) (vtype) LANES(X_REPEATED_W, P, lanes) & keep_); \
 \
		PQ_BLOCK_ORDER(P, P, itype, lanes); \
		for (c = 0; c < PQ_K - (lanes); c += (lanes)) \
			PQ_PADDED_BLOCK(P, 0, vtype, itype, lanes); \
		/* (the codebook's end: its last pair loaded to end there) */ \
		PQ_PADDED_BLOCK(P, 1, vtype, itype, lanes); \
	} while (0)

/* The block's rests (at_ where a centroid's rest starts), loaded by load */
#define PQ_GENERAL_REST(load, vtype, itype, lanes) \
	do { \
		_Pragma("GCC unroll 16") \
		for (k_ = 0; k_ < (lanes); k_++) \
		{ \
			size_t		at_ = (size_t) (c + k_) * w_ + full_; \
			vtype		cv_ = (load); \
 \
			cv_ = (vtype) ((itype) cv_ & keep_); \
			v[k_] += PQ_TERM(cv_, xt_, ip); \
		} \
	} while (0)

/*
 * Every block for any other w, given as W: a constant where the caller
 * knows it (its loops then unroll, each load at a constant offset)
 */
#define PQ_GENERAL_ALL(W, vtype, itype, lanes) \
	do { \
		const int	w_ = (W); \
		int			full_ = w_ - w_ % (lanes), \
					rest_ = w_ - full_; \
		size_t		size_ = (size_t) PQ_K * w_; \
		itype		lane_ = (itype) LANES(LANE_NUMBER, 0, lanes), \
					keep_ = lane_ < rest_, \
					shift_ = (lane_ + (lanes) - rest_) & ((lanes) - 1); \
		vtype		xt_ = (vtype) ((itype) (vtype) LANES(X_REST, 0, lanes) & keep_); \
 \
		PQ_BLOCK_ORDER(lanes, lanes, itype, lanes); \
		for (c = 0; c < PQ_K; c += (lanes)) \
		{ \
			const float *blk_ = cent + (size_t) c * w_; \
			int			j_, \
						k_; \
 \
			_Pragma("GCC unroll 16") \
			for (k_ = 0; k_ < (lanes); k_++) \
				v[k_] = (vtype) {0}; \
			for (j_ = 0; j_ < full_; j_ += (lanes)) \
			{ \
				vtype		xv_ = LOADV(vtype, x + j_); \
				const float *row_ = blk_ + j_; \
 \
				/* (row after row: one pointer, not one offset a centroid) */ \
				_Pragma("GCC unroll 16") \
				for (k_ = 0; k_ < (lanes); k_++, row_ += w_) \
					v[k_] += PQ_TERM(LOADV(vtype, row_), xv_, ip); \
			} \
			/* (the last block's last rests: loaded to end there, moved down) */ \
			if (rest_ > 0 && (size_t) (c + (lanes) - 1) * w_ + full_ + (lanes) <= size_) \
				PQ_GENERAL_REST(LOADV(vtype, cent + at_), vtype, itype, lanes); \
			else if (rest_ > 0) \
				PQ_GENERAL_REST(at_ + (lanes) <= size_ ? LOADV(vtype, cent + at_) : \
								PERMUTE(LOADV(vtype, cent + at_ + rest_ - (lanes)), \
										shift_, vtype, lanes), vtype, itype, lanes); \
			REDUCE_ADJACENT(v, lanes, ADJACENT_SUMS, itype, lanes); \
			PQ_TAKE(v[0], c, vtype, itype, lanes); \
		} \
	} while (0)

/* Every block for a w that is not a power of two up to the vector's width */
#define PQ_OTHER_W(vtype, itype, lanes) \
	do { \
		if ((lanes) > 4 && 4 * w > (lanes) && 2 * w < (lanes)) \
			PQ_PADDED_ALL((lanes) / 2, vtype, itype, lanes); \
		else if (w == 2 * (lanes)) \
			PQ_GENERAL_ALL(2 * (lanes), vtype, itype, lanes); \
		else \
			PQ_GENERAL_ALL(w, vtype, itype, lanes); \
	} while (0)

/*
 * best, best_id -> lane 0: the least of best (the lower number where
 * equal), each lane i < s against lane i + s for s = lanes / 2, ..., 1
 * (masks STEPs_lanes; those for an s the width never takes are unused)
 */
#define STEP8_16	8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15
#define STEP4_16	4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7
#define STEP2_16	2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3
#define STEP1_16	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
#define STEP8_8		0, 0, 0, 0, 0, 0, 0, 0
#define STEP4_8		4, 5, 6, 7, 4, 5, 6, 7
#define STEP2_8		2, 3, 2, 3, 2, 3, 2, 3
#define STEP1_8		1, 1, 1, 1, 1, 1, 1, 1
#define STEP8_4		0, 0, 0, 0
#define STEP4_4		0, 0, 0, 0
#define STEP2_4		2, 3, 2, 3
#define STEP1_4		1, 1, 1, 1
#define PQ_NEAREST_STEP(best, best_id, mask, vtype, itype) \
	do { \
		vtype		ob_ = SHUFFLE2(best, best, itype, mask); \
		itype		oi_ = SHUFFLE2(best_id, best_id, itype, mask); \
 \
		PQ_KEEP_WHERE((ob_ < (best)) | ((ob_ == (best)) & (oi_ < (best_id))), \
					  best, best_id, ob_, oi_, itype); \
	} while (0)
#define PQ_HALVE_NEAREST(best, best_id, vtype, itype, lanes) \
	do { \
		if ((lanes) >= 16) \
			PQ_NEAREST_STEP(best, best_id, STEP8_##lanes, vtype, itype); \
		if ((lanes) >= 8) \
			PQ_NEAREST_STEP(best, best_id, STEP4_##lanes, vtype, itype); \
		PQ_NEAREST_STEP(best, best_id, STEP2_##lanes, vtype, itype); \
		PQ_NEAREST_STEP(best, best_id, STEP1_##lanes, vtype, itype); \
	} while (0)

/*
 * distances(cent, x, w, ip, out, nearest_dist): the 256 distances from x
 * (ip = 0: squared L2, 1: dot product) into out when out is given, else
 * the nearest centroid in L2 (ties to the lowest number), its distance
 * into *nearest_dist; and the three kernels of distance.h over it
 */
#define DEFINE_PQ_KERNELS(nearest, l2_table, ip_table, distances, linkage, target, \
						  vtype, itype, lanes) \
static inline __attribute__((always_inline)) target int \
distances(const float *cent, const float *x, int w, int ip, float *out, float *nearest_dist) \
{ \
	vtype		v[16], \
				best = (vtype) {0} + FLT_MAX; \
	itype		best_id = {0}, \
				id, \
				inv; \
	float		bd; \
	int			bi, \
				c, \
				l; \
 \
	if (w == 1) \
		PQ_PACKED_ALL(1, vtype, itype, lanes); \
	else if (w == 2) \
		PQ_PACKED_ALL(2, vtype, itype, lanes); \
	else if (w == 4) \
		PQ_PACKED_ALL(4, vtype, itype, lanes); \
	else if (w == 8 && (lanes) >= 8) \
		PQ_PACKED_ALL(8, vtype, itype, lanes); \
	else if (w == 16 && (lanes) >= 16) \
		PQ_PACKED_ALL(16, vtype, itype, lanes); \
	else \
		PQ_OTHER_W(vtype, itype, lanes); \
	if (out) \
		return 0; \
	/* (then half the lanes against the other half, down to one: no branch) */ \
	PQ_HALVE_NEAREST(best, best_id, vtype, itype, lanes); \
	bd = best[0]; \
	bi = best_id[0]; \
	if (nearest_dist) \
		*nearest_dist = bd; \
	return bi; \
} \
 \
linkage target int \
nearest(const float *centroids, const float *x, int w, float *dist) \
{ \
	return distances(centroids, x, w, 0, NULL, dist); \
} \
 \
linkage target void \
l2_table(const float *centroids, const float *x, int w, float *out) \
{ \
	(void) distances(centroids, x, w, 0, out, NULL); \
} \
 \
linkage target void \
ip_table(const float *centroids, const float *x, int w, float *out) \
{ \
	(void) distances(centroids, x, w, 1, out, NULL); \
}

DEFINE_PQ_KERNELS(gateann_pq_nearest_scalar, gateann_pq_l2_table_scalar,
				  gateann_pq_ip_table_scalar, pq_distances_scalar, , , vec4f, vec4i, 4)
#ifdef GATEANN_X86
DEFINE_PQ_KERNELS(pq_nearest_avx2, pq_l2_table_avx2, pq_ip_table_avx2, pq_distances_avx2,
				  static, AVX2_TARGET, vec8f, vec8i, 8)
DEFINE_PQ_KERNELS(pq_nearest_avx512, pq_l2_table_avx512, pq_ip_table_avx512, pq_distances_avx512,
				  static, AVX512_TARGET, vec16f, vec16i, 16)
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

/*
 * ADC with the AVX2 gather, 16 subspaces per step (two 8-lane gathers).
 * Measured (test/unit/bench.c, Sapphire Rapids): faster than the scalar loop
 * from m = 16 up (m=32: 7.5 vs 8.6 ns; m=16: 4.2 vs 6.0 ns), slower below,
 * so small m goes to the scalar loop.  Also faster there than 16-lane
 * AVX-512 gathers (m=16: 9.2 ns; on an AMD EPYC 11.4 against 5.4), so the
 * AVX-512 set uses this one too and none with AVX-512 gathers is kept.
 * Not on AMD's cores, whose gathers are slower than the scalar loop
 * (gateann_distance_init).
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
#ifdef GATEANN_X86
	else
	{
		/*
		 * An AMD EPYC (Zen 4) gathers slower than the scalar ADC loop looks
		 * up (test/unit bench, ns a call, m = 32 / 96: 9.1 / 28.3 against
		 * 5.6 / 18.5), and a filtered walk at 384 dimensions, which computes
		 * ~6,700 PQ distances a query, answered faster with the loop (100K
		 * sentence embeddings, a 10 % filter, L = 20: records from the page
		 * cache 0.84-0.90 against 0.97-0.99 ms a query; on the device 717-742
		 * against 676-695 queries/s).  An Intel core gathers faster
		 * (pq_adc_avx2).  (gateann_distance_kernels has initialized
		 * __builtin_cpu_is.)
		 */
		if (__builtin_cpu_is("amd"))
			k.pq_adc = gateann_pq_adc_scalar;
	}
#endif

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
