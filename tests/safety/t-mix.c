/* t-mix.c [SECONDS] - two threads mix malloc and anonymous mmap heavily for a few seconds
 * (default 3): random sizes, one shared table of slots, so each thread frees and unmaps what
 * the other made. Every object carries a pattern checked before it goes; every one must lie in
 * the range. Exit 0 when all held. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "testutil.h"

#define SLOTS 1024

typedef struct obj {
	size_t len;         /* bytes, header included */
	int mapped;         /* 1: from mmap, 0: from malloc */
	uint64_t seed;
} obj_t;

static _Atomic(obj_t *) slot[SLOTS];
static double stop_at;
static _Atomic long made[2];

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void release(obj_t *o)
{
	CHECK(tu_verify(o + 1, o->len - sizeof *o, o->seed) < 0, "object %p (%s, %zu bytes) lost its contents",
	      (void *)o, o->mapped ? "mmap" : "malloc", o->len);
	if (o->mapped)
		CHECK(munmap(o, o->len) == 0, "munmap(%p, %zu) failed", (void *)o, o->len);
	else
		free(o);
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(id + 1);
	long n = 0;
	while (now() < stop_at) {
		for (int k = 0; k < 256; k++, n++) {
			uint64_t r = tu_rand(&rng);
			obj_t *o;
			size_t len;
			int mapped = (r & 3) == 0;
			if (mapped) {
				len = 4096 * (1 + (r >> 8) % 64);                    /* 4 KiB .. 256 KiB */
				if ((r & 0xf0) == 0)
					len = (size_t)(1 + (r >> 20) % 4) << 20;     /* some 1-4 MiB */
				o = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
				CHECK(o != MAP_FAILED, "mmap(%zu) failed", len);
			} else {
				len = sizeof(obj_t) + (r >> 8) % ((r & 0x30) ? 2000 : 300000);
				o = malloc(len);
				CHECK(o != NULL, "malloc(%zu) failed", len);
			}
			CHECK_RANGE(o, len, mapped ? "mmap" : "malloc");
			o->len = len;
			o->mapped = mapped;
			o->seed = r;
			tu_fill(o + 1, len - sizeof *o, r);
			obj_t *old = atomic_exchange(&slot[(r >> 40) % SLOTS], o);
			if (old)
				release(old);
		}
	}
	made[id] = n;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	tu_init();
	stop_at = now() + secs;
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0, "pthread_create failed");
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < SLOTS; i++)
		if (slot[i])
			release(slot[i]);
	printf("t-mix: %ld + %ld objects in %.1f s, all in the range and intact\n", made[0], made[1], secs);
	return 0;
}
