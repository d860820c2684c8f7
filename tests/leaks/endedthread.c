/* endedthread.c - threads that have ended, whose stacks glibc keeps cached for the next thread:
 * one lost a 123-byte block (a leak: its dead stack still holds the pointer, and scanning it
 * whole hid the leak, while LeakSanitizer and valgrind report it); one returned a block that
 * pthread_join has not taken yet (held by the thread's descriptor at the top of that stack: not
 * a leak); one returned a block the program joined into a global (not a leak). No scrubbing.
 * EXPECT: direct=123/1 indirect=0/0
 * STACK: worker
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "corpus.h"

static void *kept;

static NOINLINE void *worker(void *arg)
{
	char *p = malloc(123);
	strcpy(p, "lost when the thread ends");
	KEEP(p);
	return arg;
}

static NOINLINE void *giver(void *arg)
{
	void *p = malloc(77);
	KEEP(p);
	return p ? p : arg;
}

int main(void)
{
	pthread_t a, b, c;
	if (pthread_create(&b, NULL, giver, NULL) != 0) return 2;
	pthread_join(b, &kept);
	if (pthread_create(&c, NULL, giver, NULL) != 0) return 2;   /* (on b's stack, cached) */
	usleep(100000);                 /* c has ended by then, not joined */
	if (pthread_create(&a, NULL, worker, NULL) != 0) return 2;  /* (a stack of its own) */
	pthread_join(a, NULL);          /* its stack is cached as it was left */
	return kept == NULL;
}
