/* cachethrash: active false sharing (after the Hoard paper's cache-thrash).
 * T threads (default 2; `cachethrash SCALE T`) each repeat: malloc an 8-byte
 * object, write and read back each of its bytes 2000 times, free it.  An
 * allocator that gives concurrently running threads objects in one cache
 * line makes the writes bounce that line between cores; one that keeps each
 * thread's small objects apart does not.  60000 objects per thread at
 * scale 1 (~1G byte writes per thread; almost no allocator work, so the
 * time is dominated by where the objects are placed).
 * Usage: cachethrash [scale] [threads]   Prints one deterministic checksum line. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define OBJSIZE 8
#define REPS 2000
#define MAXT 64

static long objects;
static uint64_t sums[MAXT];
static pthread_barrier_t go;

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint64_t sum = 0;
	pthread_barrier_wait(&go);
	for (long i = 0; i < objects; i++) {
		volatile unsigned char *p = malloc(OBJSIZE);
		if (!p) { fprintf(stderr, "cachethrash: malloc failed\n"); exit(2); }
		for (int r = 0; r < REPS; r++)
			for (int k = 0; k < OBJSIZE; k++) {
				p[k] = (unsigned char)(r + k + t);
				sum += p[k];
			}
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
	pthread_barrier_init(&go, NULL, (unsigned)nthreads);
	pthread_t th[MAXT];
	for (int t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t)) return 2;
	for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
	uint64_t total = 0;
	for (int t = 0; t < nthreads; t++) total = total * 31 + sums[t];
	printf("cachethrash threads=%d objects=%ld checksum=%016llx\n", nthreads, objects * nthreads,
	       (unsigned long long)total);
	return 0;
}
