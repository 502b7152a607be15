/*
 * half.h — IEEE 754 binary16 ("half precision"): the vectors of records
 * written with record_precision = half (page.h).
 *
 * Plain C, no PostgreSQL headers, unit-tested.  Encoding rounds to the
 * nearest half (ties to even), as pgvector's halfvec does, so a halfvec
 * column's values come back exactly.  Decoding uses the CPU's conversion
 * instructions (F16C) where it has them: a scan decodes every record it
 * computes a distance with.
 */
#ifndef GATEANN_HALF_H
#define GATEANN_HALF_H

#include <stdint.h>

/* The largest finite half; values of 65520 and more round to infinity */
#define GATEANN_HALF_MAX 65504.0f

extern uint16_t gateann_float_to_half(float f);
extern float gateann_half_to_float(uint16_t h);

/*
 * v[0..n) to halves.  Returns -1 when every value has a finite half, else
 * the first position whose value is too large for one.
 */
extern int	gateann_half_encode(const float *v, int n, uint16_t *out);

/* h[0..n) to floats (exactly: every half is a float) */
extern void gateann_half_decode(const uint16_t *h, int n, float *out);

/*
 * The length of v - half(v), rounded up: how far a distance computed with
 * the halves can be from the one computed with v (triangle inequality).
 * Negative when a value has no finite half.
 */
extern double gateann_half_error(const float *v, int n);

#endif							/* GATEANN_HALF_H */
