/* t-purger.c MODE - the library's own purger thread must stay out of the program's way:
 *   sigwait: large blocks freed (the purger starts), then SIGUSR1 blocked and sent to the
 *            process: sigtimedwait must take it (the purger inherited the freeing thread's
 *            mask and took the signal: the process died of it)
 *   clonevm: a raw clone(CLONE_VM | CLONE_VFORK) child that frees large blocks and exits with
 *            SYS_exit, 100 times: each must end (its free started the purger with
 *            pthread_create from a thread glibc does not know: the child never ended)
 *   abandon: 16 threads make 20000 small blocks each and exit; two threads free them all at
 *            once (into the exited threads' heaps, whose locks they contend for); afterwards at
 *            most 64 live blocks may remain in the statistics (a free that found the lock taken
 *            left its run to a next free that never came: thousands stayed live, resident)
 * Exit 0 when all holds, 1 with a FAIL line. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "contig.h"
#include "testutil.h"

static int sigwait_mode(void)
{
	static char *b[64];
	for (int i = 0; i < 64; i++) {
		b[i] = malloc(256 << 10);
		CHECK(b[i] != NULL, "malloc failed");
		memset(b[i], 1, 256 << 10);
	}
	for (int i = 0; i < 64; i += 2) free(b[i]);              /* the first freed pages: the purger starts */
	struct timespec nap = { 0, 20 * 1000000L };
	nanosleep(&nap, NULL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	CHECK(pthread_sigmask(SIG_BLOCK, &s, NULL) == 0, "pthread_sigmask failed");
	for (int k = 0; k < 20; k++) {
		kill(getpid(), SIGUSR1);
		struct timespec ts = { 2, 0 };
		int got = sigtimedwait(&s, NULL, &ts);
		CHECK(got == SIGUSR1, "sigtimedwait: %d (want SIGUSR1, %d)", got, SIGUSR1);
		free(malloc(300 << 10));                              /* keep the purger busy */
	}
	for (int i = 1; i < 64; i += 2) free(b[i]);
	printf("t-purger sigwait: 20 blocked SIGUSR1 taken by sigtimedwait\n");
	return 0;
}

static void *kept[100];
static int clone_child(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++) {
		size_t n = (size_t)i * 37 + (i % 10 == 0 ? 300000 : 0);
		kept[i] = malloc(n);
		if (!kept[i]) syscall(SYS_exit, 2);
		memset(kept[i], 7, n);
	}
	for (int i = 0; i < 100; i += 2) free(kept[i]);
	syscall(SYS_exit, 0);
	return 0;
}

static int clonevm_mode(void)
{
	static char stk[1 << 16];
	for (int r = 0; r < 100; r++) {
		int pid = clone(clone_child, stk + sizeof stk, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
		CHECK(pid > 0, "clone failed");
		int st;
		CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "clone child %d: status %#x", r, st);
		for (int i = 1; i < 100; i += 2) free(kept[i]);
		free(malloc(5000));
	}
	printf("t-purger clonevm: 100 raw CLONE_VM children ended\n");
	return 0;
}

#define NP 16
#define PER 20000
static void *blocks[NP][PER];
static int ncons = 2;

static void *producer(void *a)
{
	void **b = a;
	for (int i = 0; i < PER; i++) {
		size_t n = 16 + (size_t)(i % 64) * 16;
		b[i] = malloc(n);
		CHECK(b[i] != NULL, "malloc failed");
		memset(b[i], 1, n);
	}
	return NULL;
}

static void *consumer(void *a)
{
	long k = (long)a;
	for (int p = 0; p < NP; p++)
		for (long i = k; i < PER; i += ncons) free(blocks[p][i]);
	return NULL;
}

static int abandon_mode(void)
{
	pthread_t t[NP];
	contig_stats_t st;
	TU_STATS(&st);
	size_t before = st.live_blocks;
	for (int i = 0; i < NP; i++) CHECK(pthread_create(&t[i], NULL, producer, blocks[i]) == 0, "pthread_create");
	for (int i = 0; i < NP; i++) pthread_join(t[i], NULL);
	for (long i = 0; i < ncons; i++) CHECK(pthread_create(&t[i], NULL, consumer, (void *)i) == 0, "pthread_create");
	for (int i = 0; i < ncons; i++) pthread_join(t[i], NULL);
	TU_STATS(&st);
	printf("t-purger abandon: %d blocks of exited threads freed by %d threads: %zu live before, %zu after\n",
	       NP * PER, ncons, before, st.live_blocks);
	CHECK(st.live_blocks <= before + 64, "%zu blocks still live after every block was freed (%zu before)",
	      st.live_blocks, before);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	tu_init();
	if (strcmp(mode, "sigwait") == 0) return sigwait_mode();
	if (strcmp(mode, "clonevm") == 0) return clonevm_mode();
	if (strcmp(mode, "abandon") == 0) return abandon_mode();
	fprintf(stderr, "usage: t-purger sigwait|clonevm|abandon\n");
	return 2;
}
