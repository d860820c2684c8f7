/* t-range.c - an allocation workload (about 200 MiB in total, blocks of 16 B to 4 MiB, some kept
 * live, some freed, reallocs) whose every block must lie inside the range of the environment and
 * keep its contents. Run under `ulimit -v` and in each CONTIG_MODE by ulimit.sh. With
 * "reserve MiB", a large PROT_NONE reservation of the program's own comes first. "threads N":
 * N threads that each malloc and wait for the others instead (their stacks come from libc's
 * own mmap). "heap MiB": MiB 1 MiB blocks, every one written and kept. "refill": 1 MiB blocks
 * until malloc fails (the limit), all freed, then 8 threads and a 64 MiB file mapping, which glibc
 * maps itself: the freed heap must have given the address space back. "merge MiB": a block of
 * MiB, freed, then one of nearly the whole range (CONTIG_SIZE=512M): the freed pages and the
 * never-used ones beside them hold it together. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "testutil.h"

#define KEEP 512

/* "reserve MiB": first reserve MiB of address space PROT_NONE as a runtime does for its own heap
 * (Java, SBCL), then the workload: under `ulimit -v`, auto mode must give that space up. */
static int reserve_first(const char *mib)
{
	size_t len = (size_t)atol(mib) << 20;
	void *r = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(r != MAP_FAILED, "reserving %zu MiB of address space failed: %s", len >> 20, strerror(errno));
	void *w = mmap((char *)r + len / 2, (size_t)1 << 20, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(w != MAP_FAILED, "committing 1 MiB inside the reservation failed: %s", strerror(errno));
	memset(w, 1, (size_t)1 << 20);
	printf("t-range: reserved %zu MiB at %p\n", len >> 20, r);
	return 0;
}

static pthread_barrier_t all_up;

static void *thread_main(void *arg)
{
	char *p = malloc(1000);
	CHECK(p != NULL, "malloc in a thread failed");
	CHECK_RANGE(p, 1000, "thread block");
	memset(p, 1, 1000);
	pthread_barrier_wait(&all_up);
	free(p);
	return arg;
}

/* "threads N": N threads alive at once, each with a block. */
static int many_threads(int n)
{
	pthread_t *t = calloc((size_t)n, sizeof *t);
	CHECK(t != NULL, "calloc failed");
	pthread_barrier_init(&all_up, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		int e = pthread_create(&t[i], NULL, thread_main, NULL);
		CHECK(e == 0, "pthread_create of thread %d of %d failed: %s", i, n, strerror(e));
	}
	pthread_barrier_wait(&all_up);
	for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
	free(t);
	printf("t-range: %d threads\n", n);
	return 0;
}

/* "heap MiB": that many 1 MiB blocks live at once, every page written. */
static int big_heap(int mib)
{
	for (int i = 0; i < mib; i++) {
		char *p = malloc((size_t)1 << 20);
		CHECK(p != NULL, "malloc of MiB %d of %d failed", i + 1, mib);
		CHECK_RANGE(p, (size_t)1 << 20, "block");
		memset(p, 1, (size_t)1 << 20);
	}
	printf("t-range: %d MiB live\n", mib);
	return 0;
}

static void *idle(void *arg) { return arg; }

static int refill(void)
{
	static void *b[8192];
	int n = 0;
	while (n < 8192 && (b[n] = malloc((size_t)1 << 20)) != NULL) {
		memset(b[n], 1, (size_t)1 << 20);
		n++;
	}
	CHECK(n > 16 && n < 8192, "filled %d MiB: no limit reached", n);
	for (int i = 0; i < n; i++) free(b[i]);
	pthread_t th[8];
	for (int i = 0; i < 8; i++) {
		int e = pthread_create(&th[i], NULL, idle, NULL);
		CHECK(e == 0, "after %d MiB freed, pthread_create %d: %s", n, i, strerror(e));
	}
	for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
	FILE *f = tmpfile();
	CHECK(f != NULL && ftruncate(fileno(f), (off_t)64 << 20) == 0, "tmpfile");
	void *m = mmap(NULL, (size_t)64 << 20, PROT_READ, MAP_SHARED, fileno(f), 0);
	CHECK(m != MAP_FAILED, "after %d MiB freed, a 64 MiB file mapping: %s", n, strerror(errno));
	munmap(m, (size_t)64 << 20);
	fclose(f);
	void *p = malloc((size_t)n << 19);
	CHECK(p != NULL, "after it all, %d MiB: %s", n / 2, strerror(errno));
	CHECK_RANGE(p, (size_t)n << 19, "block");
	memset(p, 2, (size_t)n << 19);
	free(p);
	printf("t-range refill: %d MiB filled and freed; 8 threads, a 64 MiB file mapping and %d MiB again\n", n, n / 2);
	return 0;
}

static int merge(int mib)
{
	char *a = malloc((size_t)mib << 20);
	CHECK(a != NULL, "malloc(%d MiB) failed", mib);
	memset(a, 1, (size_t)mib << 20);
	free(a);
	size_t big = tu_size - ((size_t)16 << 20);
	char *b = malloc(big);
	CHECK(b != NULL, "after %d MiB freed, malloc(%zu MiB) in a range of %zu MiB: %s", mib, big >> 20,
	      (size_t)(tu_size >> 20), strerror(errno));
	CHECK_RANGE(b, big, "block");
	b[0] = b[big - 1] = 1;
	free(b);
	printf("t-range merge: %d MiB freed, then %zu MiB of a %zu MiB range\n", mib, big >> 20, (size_t)(tu_size >> 20));
	return 0;
}

int main(int argc, char **argv)
{
	static void *keep[KEEP];
	static size_t keep_len[KEEP];
	uint64_t rng = 0x1234567;
	size_t total = 0, live = 0, i;

	tu_init();
	if (argc > 2 && strcmp(argv[1], "reserve") == 0) reserve_first(argv[2]);
	if (argc > 2 && strcmp(argv[1], "threads") == 0) return many_threads(atoi(argv[2]));
	if (argc > 2 && strcmp(argv[1], "heap") == 0) return big_heap(atoi(argv[2]));
	if (argc > 1 && strcmp(argv[1], "refill") == 0) return refill();
	if (argc > 2 && strcmp(argv[1], "merge") == 0) return merge(atoi(argv[2]));
	while (total < ((size_t)200 << 20)) {
		uint64_t r = tu_rand(&rng);
		size_t len;
		switch (r % 8) {
		case 0: len = ((size_t)1 << 20) + r % ((size_t)3 << 20); break;   /* 1-4 MiB */
		case 1: case 2: len = 128 * 1024 + r % 200000; break;
		default: len = 16 + r % 8000; break;
		}
		i = (size_t)(r >> 32) % KEEP;
		if (keep[i]) {
			CHECK(tu_verify(keep[i], keep_len[i], i) < 0, "block %zu lost its contents", i);
			if (r & 0x100) {
				free(keep[i]);
				live -= keep_len[i];
				keep[i] = NULL;
				continue;
			}
			/* realloc keeps the prefix */
			size_t old = keep_len[i];
			void *n = realloc(keep[i], len);
			CHECK(n != NULL, "realloc(%zu) failed", len);
			CHECK(tu_verify(n, old < len ? old : len, i) < 0, "realloc lost the contents");
			live -= old;
			keep[i] = n;
		} else {
			keep[i] = malloc(len);
			CHECK(keep[i] != NULL, "malloc(%zu) failed after %zu bytes", len, total);
		}
		CHECK_RANGE(keep[i], len, "block");
		tu_fill(keep[i], len, i);
		keep_len[i] = len;
		live += len;
		total += len;
	}
	for (i = 0; i < KEEP; i++) {
		if (!keep[i])
			continue;
		CHECK(tu_verify(keep[i], keep_len[i], i) < 0, "block %zu lost its contents", i);
		free(keep[i]);
	}
	printf("t-range: %zu MiB allocated in the range [%#lx, %#lx), %zu MiB live at the peak end\n",
	       total >> 20, (unsigned long)tu_base, (unsigned long)(tu_base + tu_size), live >> 20);
	return 0;
}
