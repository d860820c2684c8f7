/* workset: threads each random-replacing a private working set, no
 * cross-thread frees.  T threads (default 2; `workset SCALE T`), each with
 * 20000 slots of 16..1016 B blocks (uniform; ~10 MB per thread, far larger
 * than L2); each op frees a random slot's block (after checking it) and
 * puts a new block of a random size there.  3M ops per thread at scale 1.
 * Usage: workset [scale] [threads]   Prints one deterministic checksum line. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 20000
#define MINSZ 16
#define MAXSZ 1016
#define MAXT 64

static long ops_per_thread;
static uint64_t sums[MAXT];
static volatile int failed;

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint64_t rng = 0x243f6a8885a308d3ull ^ ((uint64_t)(t + 1) * 0x9e3779b97f4a7c15ull);
	unsigned char **slot = calloc(SLOTS, sizeof(*slot));
	uint16_t *size = calloc(SLOTS, sizeof(*size));
	if (!slot || !size) { failed = 1; return NULL; }
	uint64_t h = 0xcbf29ce484222325ull;
	for (long n = 0; n < ops_per_thread; n++) {
		rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
		unsigned i = (unsigned)((rng >> 32) % SLOTS);
		unsigned char *p = slot[i];
		if (p) {
			unsigned s = size[i];
			if (p[0] != (unsigned char)(s ^ i) || p[s - 1] != (unsigned char)(s + t)) failed = 1;
			h = (h ^ (p[s / 2] + s)) * 0x100000001b3ull;
			free(p);
		}
		unsigned s = MINSZ + (unsigned)((rng >> 8) % (MAXSZ - MINSZ + 1));
		p = malloc(s);
		if (!p) { fprintf(stderr, "workset: malloc(%u) failed\n", s); exit(2); }
		p[0] = (unsigned char)(s ^ i);
		p[s / 2] = (unsigned char)n;
		p[s - 1] = (unsigned char)(s + t);
		slot[i] = p;
		size[i] = (uint16_t)s;
	}
	for (unsigned i = 0; i < SLOTS; i++)
		if (slot[i]) { h = (h ^ slot[i][0]) * 0x100000001b3ull; free(slot[i]); }
	free(slot);
	free(size);
	sums[t] = h;
	return NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	int nthreads = argc > 2 ? atoi(argv[2]) : 2;
	if (nthreads < 1 || nthreads > MAXT) nthreads = 2;
	ops_per_thread = (long)(3e6 * scale);
	if (ops_per_thread < 1000) ops_per_thread = 1000;
	pthread_t th[MAXT];
	for (int t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t)) return 2;
	for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
	if (failed) { fprintf(stderr, "workset: corrupted block\n"); return 2; }
	uint64_t total = 0;
	for (int t = 0; t < nthreads; t++) total = total * 31 + sums[t];
	printf("workset threads=%d ops=%ld checksum=%016llx\n", nthreads, ops_per_thread * nthreads,
	       (unsigned long long)total);
	return 0;
}
