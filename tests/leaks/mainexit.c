/* mainexit.c - the main thread allocates, keeps one block in a global and loses another, then
 * ends with pthread_exit; a second thread ends the process with exit(0). Once the main thread
 * is gone, /proc/self/maps reads as empty (it follows the thread-group leader), and a check
 * that read it found no roots at all: every block, the global's included, was reported.
 * EXPECT: direct=45/1 indirect=0/0
 * STACK: lose main
 * BUILD: -g -O0
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include "corpus.h"

static char *config;                    /* reachable from a global to the end */

static NOINLINE void lose(void)
{
	void *p = malloc(45);
	KEEP(p);
}

static void *ender(void *arg)
{
	usleep(50000);                  /* the main thread is gone by then */
	scrub_stack();
	exit(0);
	return arg;
}

int main(void)
{
	pthread_t t;
	config = malloc(100);
	lose();
	scrub_stack();
	if (pthread_create(&t, NULL, ender, NULL) != 0) return 2;
	pthread_exit(NULL);
}
