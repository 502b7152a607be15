/*
 * test_common.h — minimal harness for the gateann unit tests.
 */
#ifndef GATEANN_TEST_COMMON_H
#define GATEANN_TEST_COMMON_H

#include <stdint.h>
#include <stdio.h>

extern int	tests_passed;
extern int	tests_failed;
extern int	case_failed;		/* set by CHECK within the running case */

/* Run one test case: a function returning void that uses CHECK. */
#define RUN_CASE(name, call) \
	do { \
		case_failed = 0; \
		call; \
		if (case_failed) \
		{ \
			tests_failed++; \
			printf("not ok - %s\n", name); \
		} \
		else \
		{ \
			tests_passed++; \
			printf("ok - %s\n", name); \
		} \
		fflush(stdout); \
	} while (0)

/* Report at most a few failing details per case. */
#define CHECK(cond, ...) \
	do { \
		if (!(cond)) \
		{ \
			if (case_failed < 5) \
			{ \
				printf("    FAIL %s:%d: ", __FILE__, __LINE__); \
				printf(__VA_ARGS__); \
				printf("\n"); \
			} \
			case_failed++; \
		} \
	} while (0)

/* deterministic test RNG */
typedef struct TestRng
{
	uint64_t	s;
} TestRng;

static inline uint64_t
trng_next(TestRng *r)
{
	uint64_t	z = (r->s += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* uniform in [-1, 1) */
static inline float
trng_float(TestRng *r)
{
	return (float) ((double) (trng_next(r) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static inline void
trng_fill(TestRng *r, float *v, size_t n, float scale)
{
	size_t		i;

	for (i = 0; i < n; i++)
		v[i] = trng_float(r) * scale;
}

extern void run_distance_tests(void);
extern void run_pq_tests(void);
extern void run_order_tests(void);
extern void run_repair_tests(void);
extern void run_topk_tests(void);
/* ids as "1,2,3", for messages (one static buffer) */
extern const char *test_show_ids(const uint32_t *ids, int n);

extern void run_search_tests(void);
extern void run_reach_tests(void);
extern void run_half_tests(void);

#endif
