/* sigflicker.c - threads that allocate and free without pause and block every signal for most of
 * each round (as code that keeps signals off around a critical section does) while main exits
 * with a leak: a thread that blocks the signal when the check lists it still gets it and parks
 * as soon as it unblocks it, so the check goes ahead and finds main's leak (it must not give up
 * on the threads as if they blocked the signal for good).
 * EXPECT: direct=91/1 indirect=0/0
 * STACK: leak_direct main
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include "corpus.h"

static void *worker(void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	uint64_t s = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	void *volatile keep[16] = { 0 };
	for (;;) {
		pthread_sigmask(SIG_BLOCK, &all, &old);
		for (int k = 0; k < 2000; k++) {
			s ^= s << 13; s ^= s >> 7; s ^= s << 17;
			unsigned i = (unsigned)(s % 16);
			free(keep[i]);
			keep[i] = malloc(16 + (s >> 16) % 2000);
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	return arg;
}

static NOINLINE void leak_direct(void)
{
	char *p = malloc(91);
	KEEP(p);
	p[0] = 1;
}

int main(void)
{
	for (uintptr_t i = 0; i < 2; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, (void *)(i + 1)) != 0) return 2;
	}
	usleep(100000);
	leak_direct();
	scrub_stack();
	return 0;
}
