/* mstress: mixed lifetimes across threads (the shape of the public
 * xmalloc-test and mstress programs).  4 waves of T threads each (default 2;
 * `mstress SCALE T`); a thread of a wave does 1.6M ops at scale 1, each:
 *   80%  short-lived: replace a random one of its 500 local slots;
 *    2%  long-lived: replace a random one of its 64 slots that outlive the
 *        thread: a wave's long-lived blocks are inherited, checked and freed
 *        by the thread of the same index in the next wave;
 *   18%  cross-thread: malloc a block and swap it (atomic exchange) into a
 *        random one of 4096 shared slots; whatever comes out, usually
 *        another thread's block, is checked and freed here.
 * Sizes: 90% 16..256 B, 9% 256 B..4 KiB, 1% 4..64 KiB.  Threads start and
 * end every wave, so allocators see thread exit with live and remotely freed
 * blocks.  Every block carries a tag; the checksum is the sum of the tags of
 * all freed blocks, which does not depend on which thread freed what.
 * Usage: mstress [scale] [threads]   Prints one deterministic checksum line. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAVES 4
#define LOCAL 500
#define LONG 64
#define SHARED 4096
#define MAXT 64

static _Atomic(unsigned char *) shared[SHARED];
static unsigned char *longlived[MAXT][LONG];    /* handed from wave to wave */
static long ops_per_thread;
static uint64_t sums[WAVES][MAXT], counts[WAVES][MAXT];
static volatile int failed;

typedef struct {
	int t, wave;
} job_t;

static inline uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Block layout: [tag:8][size:4] ... last byte = low byte of tag ^ 0xa5. */
static uint64_t check_and_free(unsigned char *p)
{
	uint64_t tag; uint32_t sz;
	memcpy(&tag, p, 8);
	memcpy(&sz, p + 8, 4);
	if (sz < 16 || sz > 65536 || p[sz - 1] != (unsigned char)(tag ^ 0xa5)) { failed = 1; return 0; }
	free(p);
	return tag;
}

static unsigned char *make(uint64_t r, uint64_t tag)
{
	unsigned u = (unsigned)(r % 100);
	uint32_t sz = u < 90 ? 16 + (uint32_t)((r >> 8) % 241)
	            : u < 99 ? 256 + (uint32_t)((r >> 8) % 3841)
	            : 4096 + (uint32_t)((r >> 8) % 61441);
	unsigned char *p = malloc(sz);
	if (!p) { fprintf(stderr, "mstress: malloc(%u) failed\n", sz); exit(2); }
	memcpy(p, &tag, 8);
	memcpy(p + 8, &sz, 4);
	p[sz - 1] = (unsigned char)(tag ^ 0xa5);
	return p;
}

static void *worker(void *arg)
{
	job_t *j = arg;
	int t = j->t;
	uint64_t rng = mix(((uint64_t)j->wave << 8) | (uint64_t)t);
	unsigned char *local[LOCAL] = { 0 };
	unsigned char **lng = longlived[t];
	uint64_t sum = 0, cnt = 0, seq = 0;
	for (unsigned i = 0; i < LONG; i++)
		if (lng[i]) { sum += check_and_free(lng[i]); cnt++; lng[i] = NULL; }
	for (long n = 0; n < ops_per_thread; n++) {
		rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
		uint64_t tag = mix(((uint64_t)j->wave << 56) | ((uint64_t)t << 40) | seq++);
		unsigned what = (unsigned)((rng >> 56) % 100);
		unsigned char *old;
		if (what < 80) {
			unsigned i = (unsigned)((rng >> 40) % LOCAL);
			old = local[i];
			local[i] = make(rng, tag);
		} else if (what < 82) {
			unsigned i = (unsigned)((rng >> 40) % LONG);
			old = lng[i];
			lng[i] = make(rng, tag);
		} else {
			unsigned i = (unsigned)((rng >> 40) % SHARED);
			old = atomic_exchange(&shared[i], make(rng, tag));
		}
		if (old) { sum += check_and_free(old); cnt++; }
	}
	for (unsigned i = 0; i < LOCAL; i++)
		if (local[i]) { sum += check_and_free(local[i]); cnt++; }
	sums[j->wave][t] = sum;
	counts[j->wave][t] = cnt;
	return NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	int nthreads = argc > 2 ? atoi(argv[2]) : 2;
	if (nthreads < 1 || nthreads > MAXT) nthreads = 2;
	ops_per_thread = (long)(1600000 * scale);
	if (ops_per_thread < 1000) ops_per_thread = 1000;
	pthread_t th[MAXT];
	job_t jobs[MAXT];
	for (int w = 0; w < WAVES; w++) {
		for (int t = 0; t < nthreads; t++) {
			jobs[t] = (job_t){ t, w };
			if (pthread_create(&th[t], NULL, worker, &jobs[t])) return 2;
		}
		for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
	}
	uint64_t total = 0, freed = 0;
	for (int w = 0; w < WAVES; w++)
		for (int t = 0; t < nthreads; t++) { total += sums[w][t]; freed += counts[w][t]; }
	for (int t = 0; t < nthreads; t++)
		for (unsigned i = 0; i < LONG; i++)
			if (longlived[t][i]) { total += check_and_free(longlived[t][i]); freed++; }
	for (unsigned i = 0; i < SHARED; i++)
		if (shared[i]) { total += check_and_free(shared[i]); freed++; }
	if (failed) { fprintf(stderr, "mstress: corrupted block\n"); return 2; }
	printf("mstress threads=%d waves=%d blocks=%llu checksum=%016llx\n", nthreads, WAVES,
	       (unsigned long long)freed, (unsigned long long)total);
	return 0;
}
