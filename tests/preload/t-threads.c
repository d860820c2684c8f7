/* t-threads.c - cross-thread frees under load: a ring of threads passes blocks of random sizes
 * through locked queues so nearly every free happens on another thread; then threads exit while
 * their blocks are still live and others free them; then threads that allocate in their last
 * thread-specific destructor round. Contents and range checked throughout.
 * Run under LD_PRELOAD. */
#include "testutil.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct blk {
	struct blk *next;        /* queue link */
	size_t size;             /* bytes requested, header included */
	uint64_t seed;           /* pattern seed */
} blk_t;

typedef struct queue {
	pthread_mutex_t lock;
	pthread_cond_t nonempty;
	blk_t *head, *tail;
} queue_t;

enum { MAX_THREADS = 16, RING_OPS = 80000, WAVES = 8, WAVE_THREADS = 6, WAVE_BLOCKS = 3000 };

static int nthreads = 8;
static queue_t queues[MAX_THREADS];

/* The pattern covers the first 512 bytes and the last 64: enough to catch overlap and reuse
 * without making the test memory-bound. */
static void blk_fill(blk_t *b, size_t size, uint64_t seed)
{
	size_t head = size < 512 ? size : 512;
	unsigned char *c = (unsigned char *)b;

	b->next = NULL;
	b->size = size;
	b->seed = seed;
	tu_fill(c + sizeof *b, head - sizeof *b, seed);
	if (size > 1024)
		tu_fill(c + size - 64, 64, ~seed);
}

static void blk_check(const blk_t *b, const char *where)
{
	size_t head = b->size < 512 ? b->size : 512;
	const unsigned char *c = (const unsigned char *)b;

	CHECK_RANGE(b, b->size, where);
	CHECK(tu_verify(c + sizeof *b, head - sizeof *b, b->seed) < 0,
	      "%s: block %p (%zu bytes) corrupted near its start", where, (const void *)b, b->size);
	if (b->size > 1024)
		CHECK(tu_verify(c + b->size - 64, 64, ~b->seed) < 0,
		      "%s: block %p (%zu bytes) corrupted at its end", where, (const void *)b, b->size);
}

static size_t random_size(uint64_t *rs)
{
	uint64_t r = tu_rand(rs) % 1000;

	if (r < 850)
		return sizeof(blk_t) + tu_rand(rs) % 232;
	if (r < 970)
		return 256 + tu_rand(rs) % 16128;
	if (r < 998)
		return 16384 + tu_rand(rs) % 245760;
	return (1u << 20) + tu_rand(rs) % (3u << 20);
}

static blk_t *blk_new(uint64_t *rs, const char *where)
{
	size_t size = random_size(rs);
	blk_t *b = malloc(size);

	CHECK(b != NULL, "%s: malloc(%zu) returned NULL", where, size);
	CHECK_RANGE(b, size, where);
	CHECK((uintptr_t)b % 16 == 0, "%s: malloc(%zu) = %p misaligned", where, size, (void *)b);
	blk_fill(b, size, tu_rand(rs));
	return b;
}

static void queue_push(queue_t *q, blk_t *b)
{
	pthread_mutex_lock(&q->lock);
	if (q->tail != NULL)
		q->tail->next = b;
	else
		q->head = b;
	q->tail = b;
	pthread_cond_signal(&q->nonempty);
	pthread_mutex_unlock(&q->lock);
}

/* Take everything queued; wait for something only when 'wait' is set. */
static blk_t *queue_take(queue_t *q, int wait)
{
	blk_t *list;

	pthread_mutex_lock(&q->lock);
	while (wait && q->head == NULL)
		pthread_cond_wait(&q->nonempty, &q->lock);
	list = q->head;
	q->head = q->tail = NULL;
	pthread_mutex_unlock(&q->lock);
	return list;
}

static void *ring_thread(void *arg)
{
	int me = (int)(intptr_t)arg;
	queue_t *out = &queues[(me + 1) % nthreads], *in = &queues[me];
	uint64_t rs = 0x1234567ULL * (uint64_t)(me + 1);
	size_t produced = 0, consumed = 0;
	blk_t *local = NULL;    /* a few blocks freed by their own thread, for the mix */

	while (produced < RING_OPS || consumed < RING_OPS) {
		int burst;
		blk_t *list;

		for (burst = 0; burst < 16 && produced < RING_OPS; burst++, produced++) {
			blk_t *b = blk_new(&rs, "ring");
			if (tu_rand(&rs) % 16 == 0) {
				b->next = local;
				local = b;
			} else {
				queue_push(out, b);
			}
		}
		/* Blocks kept locally are freed by their own thread; the neighbour counts them through a
		 * marker instead. Sent before waiting, or two threads could wait for each other. */
		while (local != NULL) {
			blk_t *next = local->next;
			blk_t *marker;
			blk_check(local, "ring local");
			free(local);
			local = next;
			marker = malloc(sizeof *marker);
			CHECK(marker != NULL, "malloc(marker) failed");
			marker->next = NULL;
			marker->size = 0;
			marker->seed = 1;
			queue_push(out, marker);
		}
		if (consumed >= RING_OPS)
			continue;
		list = queue_take(in, produced >= RING_OPS);
		while (list != NULL) {
			blk_t *next = list->next;
			if (list->size == 0) {      /* marker: the sender kept this many blocks */
				consumed += list->seed;
			} else {
				blk_check(list, "ring consumer");
				consumed++;
			}
			free(list);
			list = next;
		}
	}
	return NULL;
}

/* Phase 2: threads that allocate and exit; their blocks are freed by later threads. */
static blk_t *wave_lists[WAVE_THREADS];
static blk_t *wave_back[WAVE_THREADS];

static void *wave_alloc(void *arg)
{
	int me = (int)(intptr_t)arg;
	uint64_t rs = 0xabcdefULL + (uint64_t)me * 977;
	int i;

	for (i = 0; i < WAVE_BLOCKS; i++) {
		blk_t *b = blk_new(&rs, "wave alloc");
		b->next = wave_lists[me];
		wave_lists[me] = b;
	}
	return NULL;   /* exits with all its blocks live: its cache must not take them along */
}

static void *wave_free(void *arg)
{
	int me = (int)(intptr_t)arg;
	blk_t *b = wave_lists[(me + 1) % WAVE_THREADS];
	uint64_t rs = 99 + (uint64_t)me;
	int i;

	wave_lists[(me + 1) % WAVE_THREADS] = NULL;
	while (b != NULL) {
		blk_t *next = b->next;
		blk_check(b, "wave free");
		free(b);
		b = next;
	}
	/* And leave some of its own for the main thread to free after it has exited. */
	for (i = 0; i < WAVE_BLOCKS / 10; i++) {
		blk_t *n = blk_new(&rs, "wave back");
		n->next = wave_back[me];
		wave_back[me] = n;
	}
	return NULL;
}

/* Threads whose thread-specific destructor frees its value and sets a fresh malloc'd one, so
 * that glibc runs it in every round, the last included: the thread allocates after the library
 * handed its heap back. Each also hands 256 blocks to main, which frees them. Memory must not
 * grow with the number of such threads (a heap re-made in the last round was never handed back:
 * about 256 KiB a thread). */
#define DTOR_THREADS 1000
#define DTOR_BLOCKS 256
static pthread_key_t dtor_key;
static void *dtor_back[DTOR_BLOCKS];

static void dtor_rearm(void *v)
{
	free(v);
	void *again = malloc(32);
	CHECK(again != NULL, "malloc in a thread-specific destructor failed");
	memset(again, 0x5d, 32);
	pthread_setspecific(dtor_key, again);
}

static void *dtor_thread(void *arg)
{
	(void)arg;
	pthread_setspecific(dtor_key, malloc(32));
	for (int i = 0; i < DTOR_BLOCKS; i++) {
		dtor_back[i] = malloc(256);
		CHECK(dtor_back[i] != NULL, "malloc(256) failed");
		memset(dtor_back[i], i, 256);
	}
	return NULL;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, res = 0;
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
		fclose(f);
	}
	return res * 4;
}

static void dtor_threads(void)
{
	CHECK(pthread_key_create(&dtor_key, dtor_rearm) == 0, "pthread_key_create failed");
	long before = 0;
	for (int i = 0; i < DTOR_THREADS; i++) {
		pthread_t t;
		CHECK(pthread_create(&t, NULL, dtor_thread, NULL) == 0, "pthread_create failed");
		CHECK(pthread_join(t, NULL) == 0, "pthread_join failed");
		for (int k = 0; k < DTOR_BLOCKS; k++) {
			unsigned char *b = dtor_back[k];
			CHECK(b[0] == (unsigned char)k && b[255] == (unsigned char)k, "block %d lost its contents", k);
			free(b);
		}
		if (i == 100) {
			malloc_trim(0);
			before = rss_kib();
		}
	}
	malloc_trim(0);
	long after = rss_kib();
	/* every block is free by now: what stays resident is the program, libc and a few runs */
	CHECK(after < 32 * 1024, "%d threads that allocate in their last destructor round: RSS %ld KiB "
	      "after 100 of them, %ld KiB after all, every block freed", DTOR_THREADS, before, after);
	printf("t-threads: %d threads allocating in their destructors: RSS %ld -> %ld KiB\n", DTOR_THREADS,
	       before, after);
}

static void start_all(pthread_t *t, int n, void *(*fn)(void *))
{
	int i;

	for (i = 0; i < n; i++)
		CHECK(pthread_create(&t[i], NULL, fn, (void *)(intptr_t)i) == 0, "pthread_create failed");
	for (i = 0; i < n; i++)
		CHECK(pthread_join(t[i], NULL) == 0, "pthread_join failed");
}

int main(int argc, char **argv)
{
	pthread_t t[MAX_THREADS];
	int i, w;

	tu_init();
	if (argc > 1)
		nthreads = atoi(argv[1]);
	CHECK(nthreads >= 2 && nthreads <= MAX_THREADS, "thread count %d out of 2..%d", nthreads,
	      MAX_THREADS);
	for (i = 0; i < nthreads; i++) {
		pthread_mutex_init(&queues[i].lock, NULL);
		pthread_cond_init(&queues[i].nonempty, NULL);
	}
	start_all(t, nthreads, ring_thread);
	for (i = 0; i < nthreads; i++)
		CHECK(queues[i].head == NULL, "queue %d not drained", i);

	for (w = 0; w < WAVES; w++) {
		start_all(t, WAVE_THREADS, wave_alloc);
		start_all(t, WAVE_THREADS, wave_free);
		for (i = 0; i < WAVE_THREADS; i++) {
			while (wave_back[i] != NULL) {
				blk_t *next = wave_back[i]->next;
				blk_check(wave_back[i], "main frees wave blocks");
				free(wave_back[i]);
				wave_back[i] = next;
			}
		}
	}
	dtor_threads();
	printf("t-threads: %d ring threads x %d blocks, %d waves of %d exiting threads: ok\n",
	       nthreads, RING_OPS, WAVES, WAVE_THREADS);
	return 0;
}
