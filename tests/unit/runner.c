/* runner.c - runs every unit suite of the core; exit 0 when all pass. */
#include <stdlib.h>
#include "suites.h"

int main(void)
{
	SRunner *sr = srunner_create(config_suite());
	srunner_add_suite(sr, classes_suite());
	srunner_add_suite(sr, region_suite());
	srunner_add_suite(sr, heap_suite());
	srunner_add_suite(sr, mmap_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
