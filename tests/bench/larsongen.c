/* larsongen: Larson & Krishnan's server simulation in its thread-generation
 * form.  T chains (default 2; `larsongen SCALE T`), each a working set of
 * 5000 slots of 16..1000 B blocks (~2.5 MB, larger than L2).  A thread of a
 * chain replaces random slots for 100000 ops, then starts the next thread of
 * the chain, hands it the working set and exits; the successor frees and
 * replaces blocks allocated by a thread that no longer exists.  100
 * generations per chain at scale 1 (10M ops per chain).  The checksum is the
 * sum of the tags of all freed blocks, so it does not depend on scheduling.
 * Usage: larsongen [scale] [threads]   Prints one deterministic checksum line. */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 5000
#define OPS_PER_GEN 100000
#define MINSZ 16               /* room for the tag, the size and the tail byte */
#define MAXSZ 1000
#define MAXT 64

typedef struct {
	int id;
	int gen;                  /* generations done */
	int gens;                 /* generations to run */
	uint64_t rng;
	uint64_t seq;             /* blocks allocated so far */
	uint64_t sum;             /* tags of freed blocks */
	unsigned char *slot[SLOTS];
} chain_t;

static chain_t chains[MAXT];
static sem_t done;
static volatile int failed;

static inline uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Block layout: [tag:8][size:4] ... last byte = complement of the tag's low byte. */
static uint64_t check_and_free(unsigned char *p, uint32_t sz, uint64_t tag)
{
	if (p[0] != (unsigned char)tag || p[sz - 1] != (unsigned char)~tag) failed = 1;
	free(p);
	return tag;
}

static uint64_t tag_of(const unsigned char *p) { uint64_t t; memcpy(&t, p, 8); return t; }
static uint32_t size_of(const unsigned char *p) { uint32_t s; memcpy(&s, p + 8, 4); return s; }

static void *generation(void *arg);

static void start(chain_t *c)
{
	pthread_t th;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &a, generation, c)) { fprintf(stderr, "larsongen: pthread_create failed\n"); exit(2); }
	pthread_attr_destroy(&a);
}

static void *generation(void *arg)
{
	chain_t *c = arg;
	for (int n = 0; n < OPS_PER_GEN; n++) {
		c->rng ^= c->rng << 13; c->rng ^= c->rng >> 7; c->rng ^= c->rng << 17;
		unsigned i = (unsigned)((c->rng >> 16) % SLOTS);
		unsigned char *old = c->slot[i];
		if (old) c->sum += check_and_free(old, size_of(old), tag_of(old));
		uint32_t sz = MINSZ + (uint32_t)((c->rng >> 40) % (MAXSZ - MINSZ + 1));
		unsigned char *p = malloc(sz);
		if (!p) { fprintf(stderr, "larsongen: malloc failed\n"); exit(2); }
		uint64_t tag = mix(((uint64_t)c->id << 40) | c->seq++);
		memcpy(p, &tag, 8);
		memcpy(p + 8, &sz, 4);
		p[sz - 1] = (unsigned char)~tag;
		c->slot[i] = p;
	}
	if (++c->gen < c->gens) {
		start(c);                 /* hand the working set on, then exit */
	} else {
		for (unsigned i = 0; i < SLOTS; i++)
			if (c->slot[i]) c->sum += check_and_free(c->slot[i], size_of(c->slot[i]), tag_of(c->slot[i]));
		sem_post(&done);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	int nthreads = argc > 2 ? atoi(argv[2]) : 2;
	if (nthreads < 1 || nthreads > MAXT) nthreads = 2;
	int gens = (int)(100 * scale + 0.5);
	if (gens < 2) gens = 2;
	sem_init(&done, 0, 0);
	for (int t = 0; t < nthreads; t++) {
		chains[t].id = t;
		chains[t].gens = gens;
		chains[t].rng = mix((uint64_t)t + 101);
	}
	for (int t = 0; t < nthreads; t++) start(&chains[t]);
	for (int t = 0; t < nthreads; t++) sem_wait(&done);
	if (failed) { fprintf(stderr, "larsongen: corrupted block\n"); return 2; }
	uint64_t total = 0, seq = 0;
	for (int t = 0; t < nthreads; t++) { total += chains[t].sum; seq += chains[t].seq; }
	printf("larsongen threads=%d generations=%d blocks=%llu checksum=%016llx\n", nthreads, gens,
	       (unsigned long long)seq, (unsigned long long)total);
	return 0;
}
