/*
 * test_half.c — IEEE 754 binary16 conversions (src/half.c).
 *
 * Records written with record_precision = half hold their vectors as
 * halves; a scan's distance bound counts on the encoding being the nearest
 * half (ties to even, as pgvector's halfvec: a halfvec column's values must
 * come back exactly) and on the error gateann_half_error reports being no
 * smaller than the true one.
 */
#include "test_common.h"
#include "half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int
is_nan_half(uint16_t h)
{
	return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
}

/* every half decodes to a float that encodes back to it */
static void
case_round_trip(void)
{
	uint32_t	h;
	int			bad = 0;

	for (h = 0; h < 65536; h++)
	{
		float		f = gateann_half_to_float((uint16_t) h);

		if (is_nan_half((uint16_t) h))
		{
			CHECK(isnan(f), "half 0x%04x is no NaN as a float\n", h);
			continue;
		}
		if (gateann_float_to_half(f) != h && bad++ < 5)
			CHECK(0, "half 0x%04x -> %.9g -> 0x%04x\n", h, (double) f,
				  gateann_float_to_half(f));
	}
	CHECK(gateann_half_to_float(0x3C00) == 1.0f && gateann_half_to_float(0xC000) == -2.0f &&
		  gateann_half_to_float(0x7BFF) == 65504.0f && gateann_half_to_float(0x0001) ==
		  ldexpf(1.0f, -24), "known values\n");
	CHECK(signbit(gateann_half_to_float(0x8000)) && gateann_float_to_half(-0.0f) == 0x8000,
		  "negative zero\n");
}

/* the nearest half, ties to even, for random floats of every magnitude */
static void
case_nearest(void)
{
	uint32_t	state = 7;
	int			i;

	for (i = 0; i < 200000; i++)
	{
		float		f;
		uint16_t	h;
		double		err,
					lo,
					hi;

		state = state * 1664525u + 1013904223u;
		f = ldexpf((float) (state >> 8) / 16777216.0f, (int) ((state >> 3) % 44) - 30);
		if (state & 1)
			f = -f;
		if (fabsf(f) >= 65520.0f)
			continue;
		h = gateann_float_to_half(f);
		err = fabs((double) f - gateann_half_to_float(h));
		/* the neighbors of h on the same side of zero */
		lo = (h & 0x7FFF) > 0 ? fabs((double) f - gateann_half_to_float((uint16_t) (h - 1))) : INFINITY;
		hi = (h & 0x7FFF) < 0x7BFF ? fabs((double) f - gateann_half_to_float((uint16_t) (h + 1))) : INFINITY;
		CHECK(err <= lo && err <= hi, "%.9g -> 0x%04x (error %g, neighbors %g %g)\n",
			  (double) f, h, err, lo, hi);
		if (err == lo || err == hi)
			CHECK((h & 1) == 0, "%.9g: a tie went to odd 0x%04x\n", (double) f, h);
	}
	/* subnormal ties: 2^-25 -> 0, 3 * 2^-25 -> 2 * 2^-24 */
	CHECK(gateann_float_to_half(ldexpf(1.0f, -25)) == 0 &&
		  gateann_float_to_half(3.0f * ldexpf(1.0f, -25)) == 2, "subnormal ties\n");
	/* rounding up into the smallest normal */
	CHECK(gateann_float_to_half(ldexpf(1.0f, -14) - ldexpf(1.0f, -26)) == 0x0400,
		  "into the smallest normal: 0x%04x\n",
		  gateann_float_to_half(ldexpf(1.0f, -14) - ldexpf(1.0f, -26)));
}

/* the range: 65504 is the largest; from 65520 on a value has no finite half */
static void
case_range(void)
{
	float		v[4] = {1.0f, 65519.0f, -65520.0f, 3.0f};
	uint16_t	out[4];

	CHECK(gateann_float_to_half(65519.0f) == 0x7BFF, "65519 -> 0x%04x\n",
		  gateann_float_to_half(65519.0f));
	CHECK(gateann_float_to_half(65520.0f) == 0x7C00, "65520 -> 0x%04x\n",
		  gateann_float_to_half(65520.0f));
	CHECK(gateann_half_encode(v, 4, out) == 2, "the first value out of range is at %d\n",
		  gateann_half_encode(v, 4, out));
	CHECK(gateann_half_encode(v, 2, out) == -1, "values in range refused\n");
	CHECK(gateann_half_error(v, 4) < 0, "no error length for an unencodable vector\n");
}

/* the decoder (F16C where the CPU has it) agrees with the scalar one */
static void
case_decode(void)
{
	uint16_t   *h = malloc(sizeof(uint16_t) * 65536);
	float	   *f = malloc(sizeof(float) * 65536);
	uint32_t	i;

	for (i = 0; i < 65536; i++)
		h[i] = (uint16_t) i;
	gateann_half_decode(h, 65533, f);	/* a length that leaves a remainder */
	for (i = 0; i < 65533; i++)
	{
		float		want = gateann_half_to_float(h[i]);

		if (isnan(want))
			CHECK(isnan(f[i]), "0x%04x\n", i);
		else
			CHECK(memcmp(&want, &f[i], sizeof(float)) == 0, "0x%04x: %g, want %g\n", i,
				  (double) f[i], (double) want);
	}
	free(h);
	free(f);
}

/* the error length is never below the true one */
static void
case_error(void)
{
	float		v[100];
	uint16_t	h[100];
	double		sum = 0,
				e;
	int			i;

	for (i = 0; i < 100; i++)
		v[i] = (float) sin(i * 1.7) * powf(10.0f, (float) (i % 9) - 4.0f);
	(void) gateann_half_encode(v, 100, h);
	for (i = 0; i < 100; i++)
	{
		double		d = (double) v[i] - gateann_half_to_float(h[i]);

		sum += d * d;
	}
	e = gateann_half_error(v, 100);
	CHECK(e >= sqrt(sum) && e <= sqrt(sum) * 1.000001, "error %g, true %g\n", e, sqrt(sum));
	/* values that are halves have no error */
	for (i = 0; i < 100; i++)
		v[i] = gateann_half_to_float(h[i]);
	CHECK(gateann_half_error(v, 100) == 0, "halves have error %g\n", gateann_half_error(v, 100));
}

void
run_half_tests(void)
{
	RUN_CASE("half: every half round-trips", case_round_trip());
	RUN_CASE("half: the nearest half, ties to even, subnormals", case_nearest());
	RUN_CASE("half: 65504 the largest, 65520 out of range", case_range());
	RUN_CASE("half: the vector decoder agrees with the scalar one", case_decode());
	RUN_CASE("half: the error length bounds the true one", case_error());
}
