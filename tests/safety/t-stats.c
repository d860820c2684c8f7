/* t-stats.c - a known workload for the statistics: 1000 mallocs of 100 bytes of which 400 are
 * freed, 10 blocks of 1 MiB kept, 50 reallocs, 3 anonymous mmaps kept; then mallinfo2() must
 * agree with contig_get_stats (uordblks = live bytes) and follow a 10 MiB allocation, and
 * malloc_stats() prints the library's summary on stderr. The exit-time JSON (CONTIG_STATS=json)
 * is checked by stats-json.sh against these counts. */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "contig.h"
#include "testutil.h"

#define MIB ((size_t)1 << 20)

#define NMADE 2000
static void *made_blocks[NMADE];
static int made, released;
static pthread_mutex_t hold = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;

/* Makes NMADE blocks for main to free, then waits until main lets it go. */
static void *maker(void *arg)
{
	for (int i = 0; i < NMADE; i++) made_blocks[i] = malloc(100);
	pthread_mutex_lock(&hold);
	made = 1;
	pthread_cond_broadcast(&changed);
	while (!released) pthread_cond_wait(&changed, &hold);
	pthread_mutex_unlock(&hold);
	return arg;
}

int main(void)
{
	static void *small[1000], *big[10], *map[3];
	int (*get)(contig_stats_t *) = (int (*)(contig_stats_t *))dlsym(RTLD_DEFAULT, "contig_get_stats");
	contig_stats_t st;

	tu_init();
	for (int i = 0; i < 1000; i++) {
		small[i] = malloc(100);
		CHECK(small[i] != NULL, "malloc failed");
		memset(small[i], 1, 100);
	}
	for (int i = 0; i < 1000; i += 5)
		for (int k = 0; k < 2; k++)
			free(small[i + k]);           /* 400 freed */
	for (int i = 0; i < 10; i++) {
		big[i] = malloc(MIB);
		CHECK(big[i] != NULL, "malloc failed");
		memset(big[i], 2, MIB);
	}
	void *r = malloc(10);
	for (int i = 0; i < 50; i++)
		r = realloc(r, 10 + (size_t)i * 100);
	free(r);
	for (int i = 0; i < 3; i++) {
		map[i] = mmap(NULL, 256 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(map[i] != MAP_FAILED, "mmap failed");
	}

	CHECK(get != NULL, "contig_get_stats not found: is the library preloaded?");
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	CHECK(get(&st) == 0 && st.size == sizeof st, "contig_get_stats failed");
	{
		/* a size that ends inside a field: only whole fields are filled, and said so */
		contig_stats_t part;
		memset(&part, 0xee, sizeof part);
		part.size = offsetof(contig_stats_t, resident) + 3;
		CHECK(get(&part) == 0 && part.size == offsetof(contig_stats_t, resident),
		      "contig_get_stats with a size inside a field gave size %zu", part.size);
		CHECK(part.resident == (size_t)0xeeeeeeeeeeeeeeeeull, "contig_get_stats wrote part of a field past the size");
	}
	struct mallinfo2 mi = mallinfo2();
	printf("t-stats: live %zu blocks %zu bytes; mallinfo2 uordblks %zu arena %zu hblkhd %zu\n",
	       st.live_blocks, st.live_bytes, mi.uordblks, mi.arena, mi.hblkhd);
	CHECK(st.live_blocks >= 610, "live blocks %zu < the 610 this program holds", st.live_blocks);
	CHECK(st.live_bytes >= 600 * 100 + 10 * MIB, "live bytes %zu < what this program holds", st.live_bytes);
	CHECK(st.calls_malloc >= 1011 && st.calls_free >= 401 && st.calls_realloc >= 50 && st.calls_mmap >= 3,
	      "calls malloc %llu free %llu realloc %llu mmap %llu below the program's", (unsigned long long)st.calls_malloc,
	      (unsigned long long)st.calls_free, (unsigned long long)st.calls_realloc, (unsigned long long)st.calls_mmap);
	CHECK(st.mmap_bytes >= 3 * (256 << 10), "mmap bytes %zu", st.mmap_bytes);
	size_t d = mi.uordblks > st.live_bytes ? mi.uordblks - st.live_bytes : st.live_bytes - mi.uordblks;
	CHECK(d <= 64 * 1024, "mallinfo2 uordblks %zu but live bytes %zu", mi.uordblks, st.live_bytes);
	CHECK(mi.arena >= mi.uordblks, "mallinfo2 arena %zu < uordblks %zu", mi.arena, mi.uordblks);
	CHECK(mi.hblkhd >= 3 * (256 << 10), "mallinfo2 hblkhd %zu does not count the mmaps", mi.hblkhd);

	/* realloc calls count as realloc calls only: from NULL, kept, moving, to size 0; an mremap that
	 * moves is no mmap call (all counted as malloc, free and mmap calls before) */
	contig_stats_t s0, s1;
	/* The purger thread (started by the first freed pages) may make a block of its own at any
	 * time: exact counts need CONTIG_PURGE_MS=0, where there is none (stats-json.sh runs both). */
	const char *pms = getenv("CONTIG_PURGE_MS");
	unsigned long slack = pms && strcmp(pms, "0") == 0 ? 0 : 1;
	memset(&s0, 0, sizeof s0);
	s0.size = sizeof s0;
	s1 = s0;
	CHECK(get(&s0) == 0, "contig_get_stats failed");
	void *volatile null = NULL;                             /* (the compiler folds realloc(NULL, n)) */
	void *q = realloc(null, 100);                           /* made from NULL */
	void *kept = q;
	q = realloc(q, 90);                                     /* kept: still fits the block */
	CHECK(q == kept, "realloc from 100 to 90 bytes moved the block");
	q = realloc(q, 5000);                                   /* moved: another class */
	q = realloc(q, 2 * MIB);                                /* moved: a large block */
	CHECK(q != NULL, "realloc failed");
	CHECK(realloc(q, 0) == NULL, "realloc to 0 did not return NULL");
	void *mm = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(mm != MAP_FAILED, "mmap failed");
	void *blocker = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(blocker != MAP_FAILED, "mmap failed");        /* most likely right after mm: mm moves */
	void *moved = mremap(mm, 64 << 10, 1 << 20, MREMAP_MAYMOVE);
	CHECK(moved != MAP_FAILED, "mremap failed");
	CHECK(get(&s1) == 0, "contig_get_stats failed");
	printf("t-stats: 5 reallocs and a moving mremap: calls malloc +%llu free +%llu realloc +%llu mmap +%llu\n",
	       (unsigned long long)(s1.calls_malloc - s0.calls_malloc), (unsigned long long)(s1.calls_free - s0.calls_free),
	       (unsigned long long)(s1.calls_realloc - s0.calls_realloc), (unsigned long long)(s1.calls_mmap - s0.calls_mmap));
	CHECK(s1.calls_realloc - s0.calls_realloc == 5, "5 realloc calls counted as %llu",
	      (unsigned long long)(s1.calls_realloc - s0.calls_realloc));
	CHECK(s1.calls_malloc - s0.calls_malloc <= slack && s1.calls_free == s0.calls_free,
	      "realloc calls counted as malloc (+%llu) or free (+%llu) calls", (unsigned long long)(s1.calls_malloc - s0.calls_malloc),
	      (unsigned long long)(s1.calls_free - s0.calls_free));
	CHECK(s1.calls_mmap - s0.calls_mmap == 2, "two mmaps and a moving mremap counted as %llu mmap calls",
	      (unsigned long long)(s1.calls_mmap - s0.calls_mmap));
	munmap(moved, 1 << 20);
	munmap(blocker, 64 << 10);

	/* Blocks another thread freed count as freed at once, not when their owner next looks at
	 * its runs: the owner here made them and then waits. */
	pthread_t th;
	CHECK(pthread_create(&th, NULL, maker, NULL) == 0, "pthread_create failed");
	pthread_mutex_lock(&hold);
	while (!made) pthread_cond_wait(&changed, &hold);
	pthread_mutex_unlock(&hold);
	CHECK(get(&s0) == 0, "contig_get_stats failed");
	for (int i = 0; i < NMADE; i++) free(made_blocks[i]);
	CHECK(get(&s1) == 0, "contig_get_stats failed");
	printf("t-stats: %d blocks of a waiting thread freed here: live %zu -> %zu, frees +%llu\n", NMADE,
	       s0.live_blocks, s1.live_blocks, (unsigned long long)(s1.calls_free - s0.calls_free));
	CHECK(s1.live_blocks + NMADE <= s0.live_blocks + 2, "live blocks %zu -> %zu after %d frees", s0.live_blocks,
	      s1.live_blocks, NMADE);
	CHECK(s1.calls_free - s0.calls_free >= NMADE, "%d frees counted as %llu", NMADE,
	      (unsigned long long)(s1.calls_free - s0.calls_free));
	pthread_mutex_lock(&hold);
	released = 1;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&hold);
	pthread_join(th, NULL);

	/* mallinfo2 follows the heap: +10 MiB live, then back */
	void *ten = malloc(10 * MIB);
	struct mallinfo2 m2 = mallinfo2();
	CHECK(ten && m2.uordblks >= mi.uordblks + 10 * MIB && m2.uordblks <= mi.uordblks + 11 * MIB,
	      "after malloc(10 MiB) uordblks went from %zu to %zu", mi.uordblks, m2.uordblks);
	free(ten);
	m2 = mallinfo2();
	CHECK(m2.uordblks + 64 * 1024 >= mi.uordblks && m2.uordblks <= mi.uordblks + 64 * 1024,
	      "after free uordblks %zu, was %zu", m2.uordblks, mi.uordblks);
	struct mallinfo m1 = mallinfo();
	CHECK((size_t)m1.uordblks + 64 * 1024 >= mi.uordblks && (size_t)m1.uordblks <= mi.uordblks + 64 * 1024,
	      "mallinfo uordblks %d, mallinfo2 %zu", m1.uordblks, mi.uordblks);

	fflush(stdout);
	malloc_stats();
	return 0;   /* everything still held shows in the exit statistics */
}
