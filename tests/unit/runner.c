/* runner.c - runs every unit suite of the core; exit 0 when all pass. */
#include <stdlib.h>
#include <unistd.h>
#include "suites.h"

#if defined(__SANITIZE_ADDRESS__)
#define ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_BUILD 1
#endif
#endif

int main(int argc, char **argv)
{
	(void)argc;
#ifdef ASAN_BUILD
	/* AddressSanitizer keeps 0x8fff7000-0x2008fff6fff as its never-mapped shadow gap, which holds
	 * the default range, and its allocator sits at 0x600000000000: run the suites at 0x300000000000. The
	 * library reads its environment once, at load, hence the re-exec. */
	if (!getenv("CONTIG_BASE")) {
		setenv("CONTIG_BASE", "0x300000000000", 1);
		execv("/proc/self/exe", argv);
	}
#else
	(void)argv;
#endif
	SRunner *sr = srunner_create(config_suite());
	srunner_add_suite(sr, classes_suite());
	srunner_add_suite(sr, region_suite());
	srunner_add_suite(sr, heap_suite());
	srunner_add_suite(sr, mmap_suite());
	srunner_add_suite(sr, leak_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
