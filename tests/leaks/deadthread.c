/* deadthread.c - a thread allocates 123 bytes, keeps the pointer only in its own thread-local
 * variable and on its stack, and ends (joined): its TLS and stack are gone, so it is a leak.
 * EXPECT: direct=123/1 indirect=0/0
 * STACK: thread_leak worker
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <pthread.h>
#include <stdlib.h>
#include "corpus.h"

static __thread void *mine;

static NOINLINE void thread_leak(void)
{
	mine = malloc(123);
	KEEP(mine);
}

static void *worker(void *arg)
{
	thread_leak();
	scrub_stack();
	return arg;
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0) return 2;
	pthread_join(t, NULL);
	scrub_stack();
	return 0;
}
