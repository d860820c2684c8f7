/* t-huge.c MODE - transparent huge pages for big heaps' small runs (docs/design.md, "Huge pages"),
 * read from the VmFlags of /proc/self/smaps ("hg": advised MADV_HUGEPAGE; whether the kernel
 * found a free 2 MiB page is its business, the advice is ours):
 *   big:   one thread allocates and touches 32 MiB of 256-byte blocks: at least 16 MiB of the
 *          range is advised, in 2 MiB-aligned pieces; after freeing them all and malloc_trim(0)
 *          (their pages purged) nothing in the range is advised any more (khugepaged would
 *          refill the purged chunks)
 *   small: 1 MiB of blocks: nothing in the range is advised
 *   threads: four threads with 12 MiB each: most of each thread's blocks lie in advised chunks
 * Exits 77 when the kernel has no transparent huge pages or they are [never]. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define MIB ((size_t)1 << 20)
#define CHUNK (2 * MIB)
#define BS 256

typedef struct { uintptr_t lo, hi; } span_t;

/* Advised (VmFlags hg) spans of the range, up to max; returns how many. */
static int advised(span_t *out, int max, size_t *bytes)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	CHECK(f != NULL, "cannot open /proc/self/smaps");
	char line[512];
	uintptr_t lo = 0, hi = 0;
	int n = 0;
	*bytes = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2) {
			lo = a;
			hi = b;
			continue;
		}
		if (strncmp(line, "VmFlags:", 8) != 0 || !strstr(line, " hg")) continue;
		if (!tu_in_range(lo, 0)) continue;
		CHECK(lo % CHUNK == 0 && hi % CHUNK == 0, "advised span %#lx-%#lx is not 2 MiB-aligned",
		      (unsigned long)lo, (unsigned long)hi);
		if (n < max) out[n++] = (span_t){ lo, hi };
		*bytes += hi - lo;
	}
	fclose(f);
	return n;
}

static int covered(const span_t *s, int n, uintptr_t p)
{
	for (int i = 0; i < n; i++)
		if (p >= s[i].lo && p < s[i].hi) return 1;
	return 0;
}

static void thp_available(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char b[128] = "";
	if (!f) {
		printf("SKIP: no transparent huge pages in this kernel\n");
		exit(77);
	}
	if (!fgets(b, sizeof b, f)) b[0] = 0;
	fclose(f);
	if (strstr(b, "[never]")) {
		printf("SKIP: transparent huge pages are [never] here\n");
		exit(77);
	}
}

static void **fill(size_t bytes, size_t *count)
{
	size_t n = bytes / BS;
	void **v = malloc(n * sizeof *v);
	CHECK(v != NULL, "malloc of the slot array failed");
	for (size_t i = 0; i < n; i++) {
		v[i] = malloc(BS);
		CHECK(v[i] != NULL, "malloc(%d) failed", BS);
		memset(v[i], (int)i, BS);
	}
	*count = n;
	return v;
}

static int big(void)
{
	size_t n, bytes;
	void **v = fill(32 * MIB, &n);
	span_t s[64];
	int k = advised(s, 64, &bytes);
	size_t in = 0;
	for (size_t i = 0; i < n; i++) in += covered(s, k, (uintptr_t)v[i]);
	printf("t-huge big: %zu MiB of the range advised in %d span(s); %zu of %zu blocks inside\n",
	       bytes >> 20, k, in, n);
	CHECK(bytes >= 16 * MIB, "only %zu MiB advised after 32 MiB of small blocks", bytes >> 20);
	CHECK(in >= n / 2, "only %zu of %zu blocks lie in advised chunks", in, n);
	for (size_t i = 0; i < n; i++) free(v[i]);
	free(v);
	malloc_trim(0);
	k = advised(s, 64, &bytes);
	printf("t-huge big: after free and malloc_trim, %zu KiB advised\n", bytes >> 10);
	CHECK(bytes == 0, "%zu KiB still advised after the chunks were purged", bytes >> 10);
	return 0;
}

static int small(void)
{
	size_t n, bytes;
	void **v = fill(MIB, &n);
	span_t s[8];
	advised(s, 8, &bytes);
	printf("t-huge small: %zu KiB advised with 1 MiB of blocks\n", bytes >> 10);
	CHECK(bytes == 0, "a 1 MiB heap got %zu KiB of huge-page advice", bytes >> 10);
	for (size_t i = 0; i < n; i++) free(v[i]);
	free(v);
	return 0;
}

#define NT 4
static void **tv[NT];
static size_t tn[NT];
static pthread_barrier_t bar;

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	tv[t] = fill(12 * MIB, &tn[t]);
	pthread_barrier_wait(&bar);     /* everyone's blocks live while main looks */
	pthread_barrier_wait(&bar);
	for (size_t i = 0; i < tn[t]; i++) free(tv[t][i]);
	free(tv[t]);
	return NULL;
}

static int threads(void)
{
	pthread_t th[NT];
	pthread_barrier_init(&bar, NULL, NT + 1);
	for (int t = 0; t < NT; t++)
		CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0, "pthread_create");
	pthread_barrier_wait(&bar);
	span_t s[256];
	size_t bytes;
	int k = advised(s, 256, &bytes);
	/* every thread's heap is big: most of each thread's blocks lie in advised chunks */
	size_t worst = SIZE_MAX;
	for (int t = 0; t < NT; t++) {
		size_t in = 0;
		for (size_t j = 0; j < tn[t]; j++) in += covered(s, k, (uintptr_t)tv[t][j]);
		if (in * 100 / tn[t] < worst) worst = in * 100 / tn[t];
	}
	printf("t-huge threads: %zu MiB advised; at least %zu%% of each thread's blocks inside\n",
	       bytes >> 20, worst);
	CHECK(bytes >= 32 * MIB, "only %zu MiB advised for 4 x 12 MiB of small blocks", bytes >> 20);
	CHECK(worst >= 50, "a thread has only %zu%% of its blocks in advised chunks", worst);
	pthread_barrier_wait(&bar);
	for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	tu_init();
	thp_available();
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "big")) return big();
	if (!strcmp(m, "small")) return small();
	if (!strcmp(m, "threads")) return threads();
	fprintf(stderr, "usage: t-huge big|small|threads\n");
	return 2;
}
