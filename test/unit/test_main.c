/*
 * test_main.c — unit test driver: runs every case, prints
 * "N passed, N failed" last and exits non-zero on any failure.
 */
#include "test_common.h"
#include "distance.h"

#include <stdlib.h>

int			tests_passed = 0;
int			tests_failed = 0;
int			case_failed = 0;

const char *
test_show_ids(const uint32_t *ids, int n)
{
	static char buf[256];
	int			i,
				o = 0;

	buf[0] = 0;
	for (i = 0; i < n && o < 200; i++)
		o += snprintf(buf + o, sizeof(buf) - o, "%s%u", i ? "," : "", ids[i]);
	return buf;
}

int
main(void)
{
	gateann_distance_init();
	printf("# distance implementation: %s\n", gateann_distance_impl());
	run_distance_tests();
	run_pq_tests();
	/* PQ again on the scalar kernels */
	setenv("GATEANN_FORCE_SCALAR", "1", 1);
	gateann_distance_init();
	run_pq_tests();
	unsetenv("GATEANN_FORCE_SCALAR");
	gateann_distance_init();
	run_order_tests();
	run_repair_tests();
	run_topk_tests();
	run_search_tests();
	run_reach_tests();
	run_half_tests();
	printf("%d passed, %d failed\n", tests_passed, tests_failed);
	return tests_failed == 0 ? 0 : 1;
}
