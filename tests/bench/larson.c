/* larson: server-like working sets with random replacement (after Larson &
 * Krishnan).  T threads (default 2), each with 2000 slots; each op replaces a
 * random slot with a block of a random size 16..4096 B.  One replaced block
 * in 8 is not freed but handed to another thread's mailbox (a mutex-protected
 * array); every thread drains its own mailbox every 64 ops and frees what it
 * finds, so a share of frees are remote.  ~4M ops per thread at scale 1.
 * The checksum is the sum of the tags of all freed blocks, so it does not
 * depend on which thread freed what.
 * Usage: larson [scale] [threads]   Prints one deterministic checksum line. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 2000
#define MAILBOX 4096
#define MAXT 64

typedef struct {
	pthread_mutex_t lock;
	int n;                    /* blocks waiting */
	void *blk[MAILBOX];
} mailbox_t;

static mailbox_t box[MAXT];
static int nthreads;
static long ops_per_thread;
static uint64_t sums[MAXT];
static volatile int failed;

static inline uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Block layout: [tag:8][size:4] ... last byte = low byte of tag ^ 0x5a. */
static uint64_t check_and_free(unsigned char *p)
{
	uint64_t tag; uint32_t sz;
	memcpy(&tag, p, 8);
	memcpy(&sz, p + 8, 4);
	if (sz < 16 || sz > 4096) { failed = 1; return 0; }
	if (p[sz - 1] != (unsigned char)(tag ^ 0x5a)) { failed = 1; return 0; }
	free(p);
	return tag;
}

static uint64_t drain(int t)
{
	void *local[MAILBOX];
	pthread_mutex_lock(&box[t].lock);
	int n = box[t].n;
	memcpy(local, box[t].blk, (size_t)n * sizeof(void *));
	box[t].n = 0;
	pthread_mutex_unlock(&box[t].lock);
	uint64_t s = 0;
	for (int i = 0; i < n; i++) s += check_and_free(local[i]);
	return s;
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint64_t rng = mix((uint64_t)t + 1);
	unsigned char **slot = calloc(SLOTS, sizeof(*slot));
	uint64_t sum = 0, seq = 0;
	for (long n = 0; n < ops_per_thread; n++) {
		rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
		unsigned i = (unsigned)((rng >> 16) % SLOTS);
		unsigned char *old = slot[i];
		if (old) {
			int to = (int)((rng >> 48) % (unsigned)nthreads);
			if ((rng & 7) == 0 && to != t) {
				pthread_mutex_lock(&box[to].lock);
				int ok = box[to].n < MAILBOX;
				if (ok) box[to].blk[box[to].n++] = old;
				pthread_mutex_unlock(&box[to].lock);
				if (!ok) sum += check_and_free(old);
			} else {
				sum += check_and_free(old);
			}
		}
		uint32_t sz = 16 + (uint32_t)((rng >> 24) % 4081);
		unsigned char *p = malloc(sz);
		if (!p) { fprintf(stderr, "larson: malloc failed\n"); exit(2); }
		uint64_t tag = mix(((uint64_t)t << 40) | seq++);
		memcpy(p, &tag, 8);
		memcpy(p + 8, &sz, 4);
		p[sz - 1] = (unsigned char)(tag ^ 0x5a);
		slot[i] = p;
		if ((n & 63) == 63) sum += drain(t);
	}
	for (unsigned i = 0; i < SLOTS; i++)
		if (slot[i]) sum += check_and_free(slot[i]);
	free(slot);
	sums[t] = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	nthreads = argc > 2 ? atoi(argv[2]) : 2;
	if (nthreads < 1 || nthreads > MAXT) nthreads = 2;
	ops_per_thread = (long)(4e6 * scale);
	if (ops_per_thread < 1000) ops_per_thread = 1000;
	pthread_t th[MAXT];
	for (int t = 0; t < nthreads; t++) pthread_mutex_init(&box[t].lock, NULL);
	for (int t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t)) return 2;
	for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
	uint64_t total = 0;
	for (int t = 0; t < nthreads; t++) total += sums[t] + drain(t);
	if (failed) { fprintf(stderr, "larson: corrupted block\n"); return 2; }
	printf("larson threads=%d ops=%ld checksum=%016llx\n", nthreads,
	       ops_per_thread * nthreads, (unsigned long long)total);
	return 0;
}
