/* xthread: two threads freeing each other's blocks, both directions.
 * Each thread is a producer (malloc, fill, push into its outgoing ring) and a
 * consumer (pop from its incoming ring, check, free), so every block is freed
 * by the thread that did not allocate it.  Rings are bounded single-producer
 * single-consumer lock-free queues of 256 entries.  Sizes 16..256 B.
 * ~6M blocks per direction at scale 1.
 * Usage: xthread [scale]   Prints one deterministic checksum line. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING 256

typedef struct {
	_Atomic size_t head;             /* next slot to push (producer) */
	char pad1[64 - sizeof(size_t)];
	_Atomic size_t tail;             /* next slot to pop (consumer) */
	char pad2[64 - sizeof(size_t)];
	void *buf[RING];
} ring_t;

static ring_t rings[2];
static long per_dir;
static uint64_t sums[2];
static int failed;

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33;
	return x;
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	ring_t *out = &rings[t], *in = &rings[1 - t];
	uint64_t rng = 0x2545f4914f6cdd1dull + (uint64_t)t * 0x9e3779b97f4a7c15ull;
	long sent = 0, recvd = 0;
	uint64_t sum = 0;
	unsigned idle = 0;
	while (sent < per_dir || recvd < per_dir) {
		int progress = 0;
		size_t head = atomic_load_explicit(&out->head, memory_order_relaxed);
		size_t tail = atomic_load_explicit(&out->tail, memory_order_acquire);
		for (int k = 0; k < 32 && sent < per_dir && head - tail < RING; k++) {
			rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
			size_t sz = 16 + (rng >> 40) % 241;
			unsigned char *p = malloc(sz);
			if (!p) { fprintf(stderr, "xthread: malloc failed\n"); exit(2); }
			uint64_t seq = (uint64_t)sent;
			memcpy(p, &seq, 8);
			uint32_t s32 = (uint32_t)sz;
			memcpy(p + 8, &s32, 4);
			p[sz - 1] = (unsigned char)(seq * 31 + sz);
			out->buf[head % RING] = p;
			head++;
			atomic_store_explicit(&out->head, head, memory_order_release);
			sent++;
			progress = 1;
		}
		size_t itail = atomic_load_explicit(&in->tail, memory_order_relaxed);
		size_t ihead = atomic_load_explicit(&in->head, memory_order_acquire);
		for (int k = 0; k < 32 && itail != ihead; k++) {
			unsigned char *p = in->buf[itail % RING];
			uint64_t seq; uint32_t s32;
			memcpy(&seq, p, 8);
			memcpy(&s32, p + 8, 4);
			if (seq != (uint64_t)recvd || s32 < 16 || s32 > 256 ||
			    p[s32 - 1] != (unsigned char)(seq * 31 + s32)) {
				fprintf(stderr, "xthread: corrupted block %ld\n", recvd);
				failed = 1;
			}
			sum += mix(seq * 1000 + s32);
			free(p);
			itail++;
			atomic_store_explicit(&in->tail, itail, memory_order_release);
			recvd++;
			progress = 1;
		}
		if (progress) idle = 0;
		else if (++idle > 64) { sched_yield(); idle = 0; }
	}
	sums[t] = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	per_dir = (long)(6e6 * scale);
	if (per_dir < 1000) per_dir = 1000;
	pthread_t th[2];
	for (int t = 0; t < 2; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t)) return 2;
	for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
	if (failed) return 2;
	printf("xthread blocks=%ld checksum=%016llx%016llx\n", 2 * per_dir,
	       (unsigned long long)sums[0], (unsigned long long)sums[1]);
	return 0;
}
