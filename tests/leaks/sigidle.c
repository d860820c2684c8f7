/* sigidle.c - a thread that blocks every signal (as a program's signal-handling thread does) and
 * sleeps at exit, holding a block in its frame: the check cannot stop it, but it does not run
 * during the scan, so the check goes ahead (its stack scanned whole) and still finds main's leak.
 * EXPECT: direct=77/1 indirect=0/0
 * STACK: leak_direct main
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include "corpus.h"

static sem_t ready;

static void *sleeper(void *arg)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	char *volatile mine = malloc(4096);   /* reachable: only this frame holds it */
	mine[0] = 1;
	(void)arg;
	sem_post(&ready);
	for (;;) sleep(1000);
	return (void *)mine;
}

static NOINLINE void leak_direct(void)
{
	char *p = malloc(77);
	KEEP(p);
	p[0] = 1;
}

int main(void)
{
	pthread_t t;
	sem_init(&ready, 0, 0);
	if (pthread_create(&t, NULL, sleeper, NULL) != 0) return 2;
	sem_wait(&ready);
	leak_direct();
	scrub_stack();
	return 0;
}
