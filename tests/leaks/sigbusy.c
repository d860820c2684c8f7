/* sigbusy.c - threads that block every signal and allocate, free and realloc without pause,
 * blocks of up to 300 KB, while main exits: the check cannot stop them, and a scan while they
 * rewrite the heap could crash, hang, or call a block they hold a leak. It must do none of that:
 * it sees them run, says the check was skipped, and the program keeps its own status.
 * EXPECT: direct=0/0 indirect=0/0
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include "corpus.h"

static void *worker(void *arg)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	uint64_t s = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	void *volatile keep[16] = { 0 };
	for (;;) {
		s ^= s << 13; s ^= s >> 7; s ^= s << 17;
		unsigned i = (unsigned)(s % 16);
		if (s & 256) { free(keep[i]); keep[i] = malloc((s >> 16) % 300000); }
		else keep[i] = realloc(keep[i], 1 + (s >> 16) % 300000);
	}
	return arg;
}

int main(void)
{
	for (uintptr_t i = 0; i < 2; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, (void *)(i + 1)) != 0) return 2;
	}
	usleep(200000);
	return 0;
}
