/* t-purge.c MODE - allocate and touch 512 MiB in 64 KiB blocks, free it all, and the resident
 * set (/proc/self/statm) must fall back to within 32 MiB of where it started:
 *   delay: after sleeping 3 x CONTIG_PURGE_MS (default 100 ms), with no further call (polled
 *          for up to one more second: a loaded machine takes longer to return the pages)
 *   zero:  at once (run with CONTIG_PURGE_MS=0)
 *   trim:  at once after malloc_trim(0)    (run with CONTIG_PURGE_MS=60000: before the call the
 *   purge: at once after contig_purge()     memory must still be resident, so only the call
 *                                           can explain the drop) */
#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "testutil.h"

#define MIB ((size_t)1 << 20)
#define BLK ((size_t)64 << 10)
#define NBLK (((size_t)512 << 20) / BLK)

static size_t rss(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	CHECK(f && fscanf(f, "%ld %ld", &pages, &res) == 2, "cannot read /proc/self/statm");
	fclose(f);
	return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(int argc, char **argv)
{
	static void *blk[NBLK];
	const char *mode = argc > 1 ? argv[1] : "delay";
	const char *ms_env = getenv("CONTIG_PURGE_MS");
	long ms = ms_env ? atol(ms_env) : 100;
	size_t start, full, after;

	tu_init();
	(void)rss();                     /* stdio's buffers, before measuring */
	start = rss();
	for (size_t i = 0; i < NBLK; i++) {
		blk[i] = malloc(BLK);
		CHECK(blk[i] != NULL, "malloc(64 KiB) failed after %zu MiB", i * BLK >> 20);
		memset(blk[i], (int)(i | 1), BLK);
	}
	full = rss();
	CHECK(full >= start + 480 * MIB, "touching 512 MiB raised RSS only from %zu to %zu MiB", start >> 20, full >> 20);
	for (size_t i = 0; i < NBLK; i++)
		free(blk[i]);
	if (strcmp(mode, "delay") == 0) {
		/* The purge is due after ms; returning 512 MiB then takes its own time, which a loaded
		 * machine stretches: look every 20 ms up to one second past 3 x ms. */
		sleep_ms(3 * (ms > 0 ? ms : 1) + 10);
		for (int waited = 0; rss() > start + 32 * MIB && waited < 1000; waited += 20)
			sleep_ms(20);
	} else if (strcmp(mode, "zero") == 0) {
		/* nothing: CONTIG_PURGE_MS=0 returns pages as they are freed */
	} else {
		size_t before = rss();
		CHECK(before >= start + 400 * MIB, "%s: RSS fell to %zu MiB before the call (CONTIG_PURGE_MS=%ld): "
		      "the test cannot tell what returned it", mode, before >> 20, ms);
		if (strcmp(mode, "trim") == 0) {
			malloc_trim(0);
		} else {
			size_t (*purge)(void) = (size_t (*)(void))dlsym(RTLD_DEFAULT, "contig_purge");
			CHECK(purge != NULL, "contig_purge not found: is the library preloaded?");
			size_t n = purge();
			CHECK(n >= 400 * MIB, "contig_purge() says it returned %zu MiB", n >> 20);
		}
	}
	after = rss();
	printf("t-purge %s: RSS %zu MiB at start, %zu MiB with 512 MiB live, %zu MiB after freeing\n", mode,
	       start >> 20, full >> 20, after >> 20);
	CHECK(after <= start + 32 * MIB, "%s: RSS %zu MiB after freeing everything, started at %zu MiB", mode,
	      after >> 20, start >> 20);
	return 0;
}
