/* cachescratch: passive false sharing (after the Hoard paper's
 * cache-scratch).  The main thread mallocs T 8-byte objects one after the
 * other (so they are likely to share a cache line) and hands one to each of
 * T threads (default 2; `cachescratch SCALE T`).  Each thread writes its
 * object like cachethrash does, frees it, and then repeats: malloc an 8-byte
 * object, write and read back each byte 2000 times, free it.  An allocator
 * that gives the freed object (or its neighbours) back to the thread that
 * freed it keeps the threads writing into one line; one that serves each
 * thread from its own memory does not.  60000 objects per thread at scale 1.
 * Usage: cachescratch [scale] [threads]   Prints one deterministic checksum line. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define OBJSIZE 8
#define REPS 2000
#define MAXT 64

static long objects;
static uint64_t sums[MAXT];
static volatile unsigned char *handed[MAXT];
static pthread_barrier_t go;

static uint64_t scribble(volatile unsigned char *p, int t)
{
	uint64_t sum = 0;
	for (int r = 0; r < REPS; r++)
		for (int k = 0; k < OBJSIZE; k++) {
			p[k] = (unsigned char)(r + k + t);
			sum += p[k];
		}
	return sum;
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	pthread_barrier_wait(&go);
	uint64_t sum = scribble(handed[t], t);
	free((void *)handed[t]);
	for (long i = 1; i < objects; i++) {
		volatile unsigned char *p = malloc(OBJSIZE);
		if (!p) { fprintf(stderr, "cachescratch: malloc failed\n"); exit(2); }
		sum += scribble(p, t);
		free((void *)p);
	}
	sums[t] = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	int nthreads = argc > 2 ? atoi(argv[2]) : 2;
	if (nthreads < 1 || nthreads > MAXT) nthreads = 2;
	objects = (long)(60000 * scale);
	if (objects < 100) objects = 100;
	for (int t = 0; t < nthreads; t++) {
		handed[t] = malloc(OBJSIZE);
		if (!handed[t]) return 2;
	}
	pthread_barrier_init(&go, NULL, (unsigned)nthreads);
	pthread_t th[MAXT];
	for (int t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t)) return 2;
	for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
	uint64_t total = 0;
	for (int t = 0; t < nthreads; t++) total = total * 31 + sums[t];
	printf("cachescratch threads=%d objects=%ld checksum=%016llx\n", nthreads, objects * nthreads,
	       (unsigned long long)total);
	return 0;
}
