/* threads: short-lived threads, each with a working set of its own (a thread
 * per task or per connection, a pool that retires idle workers).  Waves of 5T
 * threads (default T = 2; `threads SCALE T`) start together and are joined
 * together; each thread fills 1000 slots with blocks of 16..516 B (its own
 * sizes, from its own seed), checks and frees them all, 50 times over, and
 * exits.  600 threads at scale 1, whatever T: what changes with T is how many
 * working sets are alive at once, and how many heaps the exited threads leave
 * for the next wave.  The checksum is the sum over threads of their blocks'
 * sizes and tags, so it does not depend on scheduling.
 * Usage: threads [scale] [T]   Prints one deterministic checksum line. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 1000
#define ROUNDS 50
#define PER_T 5
#define MAXT 64

typedef struct {
	uint64_t seed;
	uint64_t sum;
	int bad;
} task_t;

static inline uint64_t next(uint64_t *s)
{
	*s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
	return *s;
}

static void *worker(void *arg)
{
	task_t *t = arg;
	unsigned char *slot[SLOTS];
	uint16_t size[SLOTS];
	uint64_t rng = t->seed, sum = 0;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < SLOTS; i++) {
			size_t n = 16 + next(&rng) % 501;
			unsigned char *p = malloc(n);
			if (!p) { t->bad = 1; return NULL; }
			p[0] = (unsigned char)i;
			p[n - 1] = (unsigned char)(n ^ r);
			slot[i] = p;
			size[i] = (uint16_t)n;
		}
		for (int i = 0; i < SLOTS; i++) {
			unsigned char *p = slot[i];
			unsigned n = size[i];
			if (p[0] != (unsigned char)i || p[n - 1] != (unsigned char)(n ^ r)) t->bad = 1;
			sum += n + p[n - 1];
			free(p);
		}
	}
	t->sum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	int T = argc > 2 ? atoi(argv[2]) : 2;
	if (T < 1) T = 1;
	if (T > MAXT) T = MAXT;
	int per_wave = PER_T * T;
	long total = (long)(600 * scale);
	if (total < per_wave) total = per_wave;
	long waves = total / per_wave;
	static pthread_t tid[PER_T * MAXT];
	static task_t task[PER_T * MAXT];
	uint64_t sum = 0;
	long done = 0;
	for (long w = 0; w < waves; w++) {
		for (int i = 0; i < per_wave; i++) {
			task[i].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(done + i + 1) | 1;
			task[i].sum = 0;
			task[i].bad = 0;
			if (pthread_create(&tid[i], NULL, worker, &task[i]) != 0) {
				fprintf(stderr, "threads: pthread_create failed\n");
				return 2;
			}
		}
		for (int i = 0; i < per_wave; i++) {
			pthread_join(tid[i], NULL);
			if (task[i].bad) {
				fprintf(stderr, "threads: a block was corrupted or malloc failed\n");
				return 2;
			}
			sum += task[i].sum;
		}
		done += per_wave;
	}
	printf("threads T=%d threads=%ld checksum=%016llx\n", T, done, (unsigned long long)sum);
	return 0;
}
