/* prodcons: many producer/consumer pairs.  P pairs (default 2; `prodcons
 * SCALE P`), 2P threads: each producer mallocs blocks of 16..516 B, fills
 * them and pushes them into its pair's bounded lock-free single-producer
 * single-consumer ring of 1024 entries; the consumer pops, checks and frees
 * them, so every block is freed by a thread that did not allocate it and
 * the producer never sees its blocks again.  A thread that cannot make
 * progress spins a little, then yields (the threads outnumber the cores).
 * 2M blocks per pair at scale 1.
 * Usage: prodcons [scale] [pairs]   Prints one deterministic checksum line. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING 1024
#define MINSZ 16
#define MAXSZ 516
#define MAXP 32

typedef struct {
	_Atomic size_t head;             /* next slot to push (producer) */
	char pad1[64 - sizeof(size_t)];
	_Atomic size_t tail;             /* next slot to pop (consumer) */
	char pad2[64 - sizeof(size_t)];
	void *buf[RING];
	uint64_t sum;                    /* consumer's checksum */
	int id;
} ring_t;

static ring_t rings[MAXP];
static long per_pair;
static volatile int failed;

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33;
	return x;
}

static void wait_a_little(unsigned *idle)
{
	if (++*idle > 100) { sched_yield(); *idle = 0; }
}

static void *producer(void *arg)
{
	ring_t *r = arg;
	uint64_t rng = 0x5851f42d4c957f2dull ^ ((uint64_t)(r->id + 1) << 32);
	size_t head = 0;
	unsigned idle = 0;
	for (long n = 0; n < per_pair; n++) {
		rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
		uint32_t sz = MINSZ + (uint32_t)((rng >> 40) % (MAXSZ - MINSZ + 1));
		unsigned char *p = malloc(sz);
		if (!p) { fprintf(stderr, "prodcons: malloc failed\n"); exit(2); }
		uint64_t seq = (uint64_t)n;
		memcpy(p, &seq, 8);
		memcpy(p + 8, &sz, 4);
		p[sz - 1] = (unsigned char)(seq * 31 + sz);
		while (head - atomic_load_explicit(&r->tail, memory_order_acquire) >= RING)
			wait_a_little(&idle);
		r->buf[head % RING] = p;
		atomic_store_explicit(&r->head, ++head, memory_order_release);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	ring_t *r = arg;
	size_t tail = 0;
	uint64_t sum = 0;
	unsigned idle = 0;
	for (long n = 0; n < per_pair; n++) {
		while (atomic_load_explicit(&r->head, memory_order_acquire) == tail)
			wait_a_little(&idle);
		unsigned char *p = r->buf[tail % RING];
		atomic_store_explicit(&r->tail, ++tail, memory_order_release);
		uint64_t seq; uint32_t sz;
		memcpy(&seq, p, 8);
		memcpy(&sz, p + 8, 4);
		if (seq != (uint64_t)n || sz < MINSZ || sz > MAXSZ || p[sz - 1] != (unsigned char)(seq * 31 + sz))
			failed = 1;
		sum += mix(seq * 1000 + sz);
		free(p);
	}
	r->sum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	int pairs = argc > 2 ? atoi(argv[2]) : 2;
	if (pairs < 1 || pairs > MAXP) pairs = 2;
	per_pair = (long)(2e6 * scale);
	if (per_pair < 1000) per_pair = 1000;
	pthread_t th[2 * MAXP];
	for (int i = 0; i < pairs; i++) {
		rings[i].id = i;
		if (pthread_create(&th[2 * i], NULL, consumer, &rings[i]) ||
		    pthread_create(&th[2 * i + 1], NULL, producer, &rings[i])) return 2;
	}
	for (int i = 0; i < 2 * pairs; i++) pthread_join(th[i], NULL);
	if (failed) { fprintf(stderr, "prodcons: corrupted block\n"); return 2; }
	uint64_t total = 0;
	for (int i = 0; i < pairs; i++) total = total * 31 + rings[i].sum;
	printf("prodcons pairs=%d blocks=%ld checksum=%016llx\n", pairs, per_pair * pairs,
	       (unsigned long long)total);
	return 0;
}
