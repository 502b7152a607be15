/*
 * half.c — IEEE 754 binary16 conversions (half.h).
 */
#include "half.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_F16C_TARGET 1
#endif

uint16_t
gateann_float_to_half(float f)
{
	uint32_t	x,
				absx,
				sign,
				h,
				rest;

	memcpy(&x, &f, sizeof(x));
	sign = (x >> 16) & 0x8000;
	absx = x & 0x7FFFFFFF;
	if (absx >= 0x7F800000)		/* infinity, NaN (kept a NaN) */
		return (uint16_t) (sign | 0x7C00 | (absx > 0x7F800000 ? 0x200 : 0));
	if (absx >= 0x477FF000)		/* 65520 and above round to infinity */
		return (uint16_t) (sign | 0x7C00);
	if (absx < 0x38800000)
	{
		/*
		 * Below the smallest normal half (2^-14): a multiple of 2^-24.
		 * Scaling by 2^24 is exact; rounding to an integer is the half's
		 * rounding (to even, the default mode), and 0x400 is the smallest
		 * normal half's encoding, so rounding up into it is right too.
		 */
		float		a;

		memcpy(&a, &absx, sizeof(a));
		return (uint16_t) (sign | (uint32_t) lrintf(a * 16777216.0f));
	}
	/* normal: rebias the exponent (127 -> 15), keep 10 of 23 mantissa bits */
	h = ((absx >> 23) - 112) << 10 | ((absx & 0x7FFFFF) >> 13);
	rest = absx & 0x1FFF;
	if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
		h++;					/* a carry into the exponent is the right result */
	return (uint16_t) (sign | h);
}

float
gateann_half_to_float(uint16_t h)
{
	uint32_t	sign = (uint32_t) (h & 0x8000) << 16;
	uint32_t	e = (h >> 10) & 0x1F;
	uint32_t	m = h & 0x3FF;
	uint32_t	x;
	float		f;

	if (e == 0)
	{
		f = (float) m * (1.0f / 16777216.0f);	/* subnormal or zero: exact */
		return sign ? -f : f;
	}
	if (e == 31)
		x = sign | 0x7F800000 | (m << 13);
	else
		x = sign | ((e + 112) << 23) | (m << 13);
	memcpy(&f, &x, sizeof(f));
	return f;
}

int
gateann_half_encode(const float *v, int n, uint16_t *out)
{
	int			bad = -1;
	int			i;

	for (i = 0; i < n; i++)
	{
		out[i] = gateann_float_to_half(v[i]);
		if (bad < 0 && (out[i] & 0x7C00) == 0x7C00 && isfinite(v[i]))
			bad = i;
	}
	return bad;
}

#ifdef HAVE_F16C_TARGET
__attribute__((target("avx,f16c")))
static void
decode_f16c(const uint16_t *h, int n, float *out)
{
	int			i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (h + i))));
	for (; i < n; i++)
		out[i] = gateann_half_to_float(h[i]);
}
#endif

void
gateann_half_decode(const uint16_t *h, int n, float *out)
{
#ifdef HAVE_F16C_TARGET
	static int	have_f16c = -1;

	if (have_f16c < 0)
	{
		unsigned int a,
					b,
					c = 0,
					d;

		/* F16C: CPUID leaf 1, ECX bit 29; the 256-bit registers: AVX2's check */
		__builtin_cpu_init();
		have_f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0 &&
			__builtin_cpu_supports("avx2");
	}
	if (have_f16c)
	{
		decode_f16c(h, n, out);
		return;
	}
#endif
	{
		int			i;

		for (i = 0; i < n; i++)
			out[i] = gateann_half_to_float(h[i]);
	}
}

double
gateann_half_error(const float *v, int n)
{
	double		sum = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		uint16_t	h = gateann_float_to_half(v[i]);
		double		d;

		if ((h & 0x7C00) == 0x7C00)
			return -1;
		d = (double) v[i] - (double) gateann_half_to_float(h);
		sum += d * d;
	}
	/* the squares and sums round to within n 2^-53 relative: round up */
	return sqrt(sum) * (1.0 + 1e-9);
}
