/* threadstack.c - a block held only by a local variable of a thread that is still blocked when
 * the program exits: the thread's stack is a root, so it is not a leak.
 * EXPECT: direct=0/0 indirect=0/0
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <unistd.h>
#include "corpus.h"

static sem_t ready;

static void *holder(void *arg)
{
	char *volatile mine = malloc(4096);    /* the variable itself lives in the frame */
	mine[0] = 1;
	(void)arg;
	sem_post(&ready);
	for (;;) pause();               /* blocked at exit, holding mine */
	return (void *)mine;
}

int main(void)
{
	pthread_t t;
	sem_init(&ready, 0, 0);
	if (pthread_create(&t, NULL, holder, NULL) != 0) return 2;
	sem_wait(&ready);
	scrub_stack();
	return 0;                       /* exit with the thread alive */
}
