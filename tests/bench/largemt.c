/* largemt: large blocks from several threads at once.  T threads (default
 * 2; `largemt SCALE T`), each with 16 slots replaced at random by blocks of
 * 64 KiB..16 MiB (log-uniform); one 4 KiB page of each new block is written
 * (a random one, plus the first bytes), and checked before the block is
 * freed.  Little memory is touched: this measures how large requests are
 * served and returned (mmap/munmap, the kernel's mmap lock, the allocator's
 * large-block lists) while other threads do the same.  40000 ops per thread
 * at scale 1.
 * Usage: largemt [scale] [threads]   Prints one deterministic checksum line. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 16
#define PAGE 4096
#define MAXT 64

static long ops_per_thread;
static uint64_t sums[MAXT];
static volatile int failed;

typedef struct {
	unsigned char *p;
	size_t size;              /* bytes */
	size_t page;              /* offset of the written page */
	uint64_t tag;
} slot_t;

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint64_t rng = 0x13198a2e03707344ull ^ ((uint64_t)(t + 1) * 0x9e3779b97f4a7c15ull);
	slot_t s[SLOTS];
	memset(s, 0, sizeof(s));
	uint64_t h = 0;
	for (long n = 0; n <= ops_per_thread; n++) {
		rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
		for (unsigned k = 0; k < SLOTS; k++) {
			unsigned i = n == ops_per_thread ? k : (unsigned)((rng >> 40) % SLOTS);
			slot_t *x = &s[i];
			if (x->p) {
				uint64_t a, b;
				memcpy(&a, x->p, 8);
				memcpy(&b, x->p + x->page, 8);
				if (a != x->tag || b != ~x->tag) failed = 1;
				h = (h ^ (x->size + x->page)) * 0x100000001b3ull;
				free(x->p);
				x->p = NULL;
			}
			if (n < ops_per_thread) break;
		}
		if (n == ops_per_thread) break;
		unsigned i = (unsigned)((rng >> 40) % SLOTS);
		unsigned e = 16 + (unsigned)(rng % 8);   /* 2^e + rand(2^e): 64 KiB .. 16 MiB */
		size_t sz = ((size_t)1 << e) + (size_t)((rng >> 8) % ((uint64_t)1 << e));
		unsigned char *p = malloc(sz);
		if (!p) { fprintf(stderr, "largemt: malloc(%zu) failed\n", sz); exit(2); }
		size_t page = PAGE * (1 + (size_t)((rng >> 20) % (sz / PAGE - 1)));
		uint64_t tag = rng ^ (uint64_t)n, nt = ~tag;
		memcpy(p, &tag, 8);
		memcpy(p + page, &nt, 8);
		s[i] = (slot_t){ p, sz, page, tag };
	}
	sums[t] = h;
	return NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	int nthreads = argc > 2 ? atoi(argv[2]) : 2;
	if (nthreads < 1 || nthreads > MAXT) nthreads = 2;
	ops_per_thread = (long)(40000 * scale);
	if (ops_per_thread < 50) ops_per_thread = 50;
	pthread_t th[MAXT];
	for (int t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t)) return 2;
	for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
	if (failed) { fprintf(stderr, "largemt: corrupted block\n"); return 2; }
	uint64_t total = 0;
	for (int t = 0; t < nthreads; t++) total = total * 31 + sums[t];
	printf("largemt threads=%d ops=%ld checksum=%016llx\n", nthreads, ops_per_thread * nthreads,
	       (unsigned long long)total);
	return 0;
}
