/* t-fork.c - fork() while another thread allocates and frees: every child can allocate (small and
 * large blocks, and in a new thread) and exits 0. Run under LD_PRELOAD. */
#include "testutil.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { FORKS = 50, CHURN_SLOTS = 256 };

static atomic_int stop;

static void *churn(void *arg)
{
	void *slot[CHURN_SLOTS] = { 0 };
	uint64_t rs = 5;
	unsigned long n = 0;

	while (!atomic_load(&stop)) {
		size_t i = tu_rand(&rs) % CHURN_SLOTS;
		size_t size = tu_rand(&rs) % 8 == 0 ? 4096 + tu_rand(&rs) % (2u << 20)
		                                    : 1 + tu_rand(&rs) % 1024;
		free(slot[i]);
		slot[i] = malloc(size);
		CHECK(slot[i] != NULL, "churn: malloc(%zu) failed", size);
		CHECK_RANGE(slot[i], size, "churn");
		memset(slot[i], (int)i, size < 256 ? size : 256);
		n++;
	}
	for (size_t i = 0; i < CHURN_SLOTS; i++)
		free(slot[i]);
	return (void *)(uintptr_t)n;
}

static void *child_thread(void *arg)
{
	void *p = malloc(1000);

	CHECK(p != NULL, "child thread: malloc failed");
	CHECK_RANGE(p, 1000, "child thread");
	free(p);
	return NULL;
}

/* In the child: the allocator's locks must have been left usable by the atfork handlers. */
static void child(int k)
{
	static const size_t sizes[] = { 1, 24, 100, 1000, 5000, 70000, 1u << 20, 16u << 20, 64u << 20 };
	void *p[sizeof sizes / sizeof sizes[0]];
	pthread_t t;
	size_t i;
	int round;

	alarm(20);   /* a deadlocked child dies of SIGALRM instead of hanging the suite */
	for (round = 0; round < 20; round++) {
		for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			p[i] = round % 2 ? calloc(1, sizes[i]) : malloc(sizes[i]);
			CHECK(p[i] != NULL, "child %d: malloc(%zu) failed", k, sizes[i]);
			CHECK_RANGE(p[i], sizes[i], "child");
			memset(p[i], 0x77, sizes[i] < 65536 ? sizes[i] : 65536);
			((char *)p[i])[sizes[i] - 1] = 1;
		}
		for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
			free(p[i]);
	}
	CHECK(pthread_create(&t, NULL, child_thread, NULL) == 0, "child: pthread_create failed");
	CHECK(pthread_join(t, NULL) == 0, "child: pthread_join failed");
	_exit(0);
}

int main(void)
{
	pthread_t t;
	int k, failures = 0;
	void *ops;

	tu_init();
	CHECK(pthread_create(&t, NULL, churn, NULL) == 0, "pthread_create failed");
	for (k = 0; k < FORKS; k++) {
		pid_t pid;
		int status;
		void *q = malloc(100 + (size_t)k * 1000);

		CHECK(q != NULL, "parent malloc failed");
		fflush(stdout);
		pid = fork();
		CHECK(pid >= 0, "fork failed");
		if (pid == 0)
			child(k);
		free(q);
		CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");
		if (WIFSIGNALED(status)) {
			fprintf(stderr, "FAIL: child %d killed by signal %d (%s)\n", k, WTERMSIG(status),
			        strsignal(WTERMSIG(status)));
			failures++;
		} else if (WEXITSTATUS(status) != 0) {
			fprintf(stderr, "FAIL: child %d exited with status %d\n", k, WEXITSTATUS(status));
			failures++;
		}
	}
	atomic_store(&stop, 1);
	CHECK(pthread_join(t, &ops) == 0, "pthread_join failed");
	CHECK(failures == 0, "%d of %d children failed", failures, FORKS);
	printf("t-fork: %d children ok, churn thread did %lu operations\n", FORKS,
	       (unsigned long)(uintptr_t)ops);
	return 0;
}
