/* t-purge.c MODE - allocate and touch 512 MiB in 64 KiB blocks, free it all, and the resident
 * set (/proc/self/statm) must fall back to within 32 MiB of where it started:
 *   delay: after sleeping 3 x CONTIG_PURGE_MS (default 100 ms), with no further call (polled
 *          for up to one more second: a loaded machine takes longer to return the pages)
 *   zero:  at once (run with CONTIG_PURGE_MS=0)
 *   trim:  at once after malloc_trim(0)    (run with CONTIG_PURGE_MS=60000: before the call the
 *   purge: at once after contig_purge()     memory must still be resident, so only the call
 *                                           can explain the drop)
 *   shrink: one 512 MiB block cut to 1 MiB by realloc gives its tail back at once (run with
 *          CONTIG_PURGE_MS=0; the tail was put in the free runs without a purge)
 *   locked: 4 blocks of 1 MiB filled and mlock'ed, freed without munlock, given back
 *          (malloc_trim), then 4 callocs and 4 mmaps of 1 MiB must read as zero: MADV_DONTNEED
 *          fails on locked pages, and their old bytes came back (exit 77 when mlock is refused)
 *   orphan: 512 MiB of 1000-byte blocks from a thread that then exits, freed by the main
 *          thread, back after 3 x CONTIG_PURGE_MS with no further call (the frees drain the
 *          exited thread's heap under its lock, where the purger could not be started)
 *   adopt [kept|none]: a thread takes three 200-byte blocks, frees them (first, last, middle) and
 *          exits; the next thread's first malloc(200) gets the middle one (kept: the exited
 *          thread's run of that class waits for it as it was left, free list and all) or not
 *          (none: CONTIG_PURGE_MS=0 keeps nothing, the run went back)
 *   exited: a thread fills the first run of 40 classes and frees it all; the committed bytes
 *          (contig_get_stats) it held after it exits are back within 3 x CONTIG_PURGE_MS with
 *          no further call, though the runs wait for a next thread first */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "contig.h"
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

static int shrink(size_t start)
{
	char *b = malloc(512 * MIB);
	CHECK(b != NULL, "malloc(512 MiB) failed");
	memset(b, 1, 512 * MIB);
	size_t full = rss();
	b = realloc(b, MIB);
	CHECK(b != NULL && b[MIB - 1] == 1, "realloc to 1 MiB failed");
	size_t after = rss();
	printf("t-purge shrink: RSS %zu MiB at start, %zu MiB with 512 MiB live, %zu MiB after realloc to 1 MiB\n",
	       start >> 20, full >> 20, after >> 20);
	CHECK(after <= start + 32 * MIB, "shrink: RSS %zu MiB after realloc to 1 MiB, started at %zu MiB", after >> 20, start >> 20);
	free(b);
	return 0;
}

#define ORPHANS (512 * MIB / 1000)
static void *orphan_blocks[ORPHANS];

static void *orphan_thread(void *arg)
{
	for (size_t i = 0; i < ORPHANS; i++) {
		orphan_blocks[i] = malloc(1000);
		CHECK(orphan_blocks[i] != NULL, "malloc(1000) failed");
		memset(orphan_blocks[i], 1, 1000);
	}
	return arg;
}

static int orphan(size_t start, long ms)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, orphan_thread, NULL) == 0, "pthread_create failed");
	pthread_join(t, NULL);
	size_t full = rss();
	for (size_t i = 0; i < ORPHANS; i++) free(orphan_blocks[i]);
	sleep_ms(3 * (ms > 0 ? ms : 1) + 10);
	for (int waited = 0; rss() > start + 32 * MIB && waited < 1000; waited += 20)
		sleep_ms(20);
	size_t after = rss();
	printf("t-purge orphan: RSS %zu MiB at start, %zu MiB with an exited thread's 512 MiB, %zu MiB after freeing\n",
	       start >> 20, full >> 20, after >> 20);
	CHECK(after <= start + 32 * MIB, "orphan: RSS %zu MiB after freeing everything, started at %zu MiB", after >> 20, start >> 20);
	return 0;
}

static void *handoff_thread(void *arg)
{
	size_t step = (uintptr_t)arg >> 1, from = (uintptr_t)arg & 1;
	for (size_t i = from; i < ORPHANS; i += step) free(orphan_blocks[i]);
	return NULL;
}

/* blocks of another size, 200 at a time: the slow path of their class runs */
static void other_work(void)
{
	static void *other[200];
	for (int i = 0; i < 200; i++) {
		other[i] = malloc(3000);
		CHECK(other[i] != NULL, "malloc(3000) failed");
		memset(other[i], 2, 3000);
	}
	for (int i = 0; i < 200; i++) free(other[i]);
}

static void hand_off(uintptr_t how)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, handoff_thread, (void *)how) == 0, "pthread_create failed");
	pthread_join(t, NULL);
}

static int handoff(size_t start, long ms, bool late)
{
	for (size_t i = 0; i < ORPHANS; i++) {
		orphan_blocks[i] = malloc(1000);
		CHECK(orphan_blocks[i] != NULL, "malloc(1000) failed");
		memset(orphan_blocks[i], 1, 1000);
	}
	size_t full = rss();
	if (late) {
		hand_off(2 << 1 | 0);           /* every other block: each run keeps live blocks */
		other_work();                   /* the owner puts the runs back on their lists */
		hand_off(2 << 1 | 1);           /* the rest, with no word to the owner */
	} else
		hand_off(1 << 1 | 0);
	/* the owner works on with other sizes: about 3 x CONTIG_PURGE_MS, then up to 3 s more (a
	 * late hand-off waits for a sweep, whose wait doubles while it finds nothing) */
	long until = 3 * (ms > 0 ? ms : 1) + 10 + 3000;
	for (long waited = 0; waited < until; waited += 20) {
		other_work();
		sleep_ms(20);
		if (waited >= 3 * ms + 10 && rss() <= start + 32 * MIB) break;
	}
	size_t after = rss();
	printf("t-purge handoff%s: RSS %zu MiB at start, %zu MiB with 512 MiB live, %zu MiB after another thread freed it\n",
	       late ? " late" : "", start >> 20, full >> 20, after >> 20);
	CHECK(after <= start + 32 * MIB, "handoff: RSS %zu MiB after another thread freed everything, started at %zu MiB",
	      after >> 20, start >> 20);
	return 0;
}

static void *adopt_first(void *arg)
{
	uintptr_t *y = arg;
	char *a = malloc(200), *b = malloc(200), *c = malloc(200);
	CHECK(a && b && c, "malloc(200) failed");
	*y = (uintptr_t)b;                      /* the head of the free list the thread leaves */
	free(a);
	free(c);
	free(b);
	return NULL;
}

static void *adopt_second(void *arg)
{
	void **got = arg;
	*got = malloc(200);
	return NULL;
}

static int adopt(const char *want)
{
	uintptr_t y = 0;
	void *got = NULL;
	pthread_t t;
	CHECK(pthread_create(&t, NULL, adopt_first, &y) == 0, "pthread_create failed");
	pthread_join(t, NULL);
	CHECK(pthread_create(&t, NULL, adopt_second, &got) == 0, "pthread_create failed");
	pthread_join(t, NULL);
	CHECK(got != NULL, "malloc(200) failed");
	bool kept = (uintptr_t)got == y;
	printf("t-purge adopt: the exited thread's last free %#lx, the next thread's first malloc %p: %s\n",
	       (unsigned long)y, got,
	       kept ? "the same block (its run was kept)" : "another block");
	if (strcmp(want, "kept") == 0)
		CHECK(kept, "adopt: the next thread did not get the exited thread's run back as it was left");
	else
		CHECK(!kept, "adopt: with CONTIG_PURGE_MS=0 the exited thread's run was kept");
	return 0;
}

#define EXIT_CLASSES 40
static size_t committed(void);
static size_t exited_full;                  /* committed with the thread's blocks live */

static void *exited_thread(void *arg)
{
	(void)arg;
	static void *b[EXIT_CLASSES][64];
	for (int c = 0; c < EXIT_CLASSES; c++) {
		size_t n = 16 + (size_t)c * 96;         /* 16 B .. 3760 B: a run of each class */
		for (int i = 0; i < 64; i++) {
			b[c][i] = malloc(n);
			CHECK(b[c][i] != NULL, "malloc(%zu) failed", n);
			memset(b[c][i], 1, n);
		}
	}
	exited_full = committed();
	for (int c = 0; c < EXIT_CLASSES; c++)
		for (int i = 0; i < 64; i++) free(b[c][i]);
	return NULL;
}

static size_t committed(void)
{
	contig_stats_t st;
	TU_STATS(&st);
	return st.committed;
}

static void *nothing(void *arg) { return arg; }

static int exited(long ms)
{
	/* a first thread, and time for what it leaves, so that c0 has what any thread costs the
	 * program (its TLS, libc's per-thread blocks) */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, nothing, NULL) == 0, "pthread_create failed");
	pthread_join(t, NULL);
	sleep_ms(3 * (ms > 0 ? ms : 1) + 10);
	size_t c0 = committed();
	CHECK(pthread_create(&t, NULL, exited_thread, NULL) == 0, "pthread_create failed");
	pthread_join(t, NULL);
	size_t c1 = committed();
	sleep_ms(3 * (ms > 0 ? ms : 1) + 10);
	size_t c2 = committed();
	for (int waited = 0; c2 > c0 + 256 * 1024 && waited < 1000; waited += 20) {
		sleep_ms(20);
		c2 = committed();
	}
	printf("t-purge exited: committed %zu KiB before the thread, %zu KiB with its blocks, %zu KiB once it "
	       "exited, %zu KiB after 3 x %ld ms\n", c0 >> 10, exited_full >> 10, c1 >> 10, c2 >> 10, ms);
	CHECK(exited_full >= c0 + MIB, "exited: the thread's blocks were not committed (%zu -> %zu KiB)",
	      c0 >> 10, exited_full >> 10);
	CHECK(c2 <= c0 + 256 * 1024, "exited: %zu KiB still committed after 3 x CONTIG_PURGE_MS, %zu before the thread",
	      c2 >> 10, c0 >> 10);
	return 0;
}

static size_t nonzero(const unsigned char *p, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++) c += p[i] != 0;
	return c;
}

static int locked(void)
{
	enum { K = 4 };
	unsigned char *b[K];
	for (int i = 0; i < K; i++) {
		b[i] = malloc(MIB);
		CHECK(b[i] != NULL, "malloc(1 MiB) failed");
		memset(b[i], 0xaa, MIB);
		if (mlock(b[i], MIB) != 0) {
			printf("locked: mlock refused (%s): skipped\n", strerror(errno));
			return 77;
		}
	}
	for (int i = 0; i < K; i++) free(b[i]);
	malloc_trim(0);
	size_t bad = 0;
	for (int i = 0; i < K; i++) {
		unsigned char *q = calloc(1, MIB);
		CHECK(q != NULL, "calloc(1 MiB) failed");
		bad += nonzero(q, MIB) != 0;
	}
	for (int i = 0; i < K; i++) {
		unsigned char *q = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(q != MAP_FAILED, "mmap(1 MiB) failed");
		bad += nonzero(q, MIB) != 0;
	}
	printf("locked: %zu of %d callocs and mmaps after freed locked blocks hold old bytes\n", bad, 2 * K);
	CHECK(bad == 0, "memory that must read as zero holds a freed locked block's bytes");
	return 0;
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
	if (strcmp(mode, "shrink") == 0) return shrink(start);
	if (strcmp(mode, "orphan") == 0) return orphan(start, ms);
	if (strcmp(mode, "handoff") == 0) return handoff(start, ms, argc > 2 && strcmp(argv[2], "late") == 0);
	if (strcmp(mode, "locked") == 0) return locked();
	if (strcmp(mode, "adopt") == 0) return adopt(argc > 2 ? argv[2] : "kept");
	if (strcmp(mode, "exited") == 0) return exited(ms);
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
