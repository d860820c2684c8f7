/* churn.c - a leak of 77 bytes while another thread keeps allocating and freeing (holding up to
 * 64 blocks on its stack) until the very end: the churning thread's blocks must never look
 * leaked, and the scan must not crash or hang.
 * EXPECT: direct=77/1 indirect=0/0
 * STACK: leak_once main
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include "corpus.h"

static sem_t started;

static void *churn(void *arg)
{
	void *live[64] = { 0 };
	unsigned x = 12345;
	for (unsigned long i = 0;; i++) {
		x = x * 1103515245u + 12345u;
		unsigned k = (x >> 8) % 64;
		free(live[k]);
		live[k] = malloc(16 + (x >> 16) % 2000);
		KEEP(live);
		if (i == 1000) sem_post(&started);
	}
	return arg;
}

static NOINLINE void leak_once(void) { char *p = malloc(77); KEEP(p); }

int main(void)
{
	pthread_t t;
	sem_init(&started, 0, 0);
	if (pthread_create(&t, NULL, churn, NULL) != 0) return 2;
	sem_wait(&started);
	leak_once();
	scrub_stack();
	return 0;                       /* exit while the thread churns */
}
