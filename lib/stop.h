/* stop.h - stopping the process's other threads while the leak check scans the heap: each one is
 * signalled and parks in the handler, leaving its stack pointer and registers (roots) behind. */
#ifndef CONTIG_STOP_H
#define CONTIG_STOP_H

#include "common.h"

#define STOP_NREGS 40                   /* registers kept per thread (x86-64 has 23, arm64 31) */

typedef struct stop_thread {
	uintptr_t sp;                       /* stack pointer where it was stopped; 0 unknown */
	uintptr_t regs[STOP_NREGS];         /* its registers there, 0 past the ones it has */
} stop_thread_t;

typedef enum {
	STOP_QUIET,                         /* every thread is parked, or asleep and staying so */
	STOP_RUNNING,                       /* a thread that cannot be stopped is running: nothing is
	                                       stopped any more */
	STOP_NOMEM,                         /* no memory for the thread table: nothing stopped */
	STOP_NOTASKS,                       /* /proc/self/task unreadable, or more threads than the
	                                       table holds: nothing stopped */
} stop_result_t;

/* Stops every other thread of the process. The caller is thread 0, with its stack pointer sp and
 * the nregs registers it saved. A thread the signal cannot reach (it blocks the signal, or the
 * program handles it) is let run only while it sleeps: it must be asleep for 2 ms (found so within
 * 500 ms) before the scan, and stop_resume() checks it did not run since. */
HIDDEN stop_result_t stop_world(uintptr_t sp, const volatile uintptr_t *regs, int nregs);

/* Lets every stopped thread go. Returns false when a thread that was not stopped ran (or exited)
 * while the world was stopped: what the caller read meanwhile may be torn. */
HIDDEN bool stop_resume(void);

/* While stopped: the number of thread slots, and slot i's stack pointer and registers when they
 * are roots (the caller's, and every parked thread's), else NULL. */
HIDDEN int stop_threads_n(void);
HIDDEN const stop_thread_t *stop_thread(int i);

/* [lo, hi) is an anonymous mapping right above a guard page: when it is the stack of a thread
 * that has ended (glibc keeps such stacks for reuse, whole), the address of that thread's
 * descriptor at its top, else 0. Below the descriptor lie the dead thread's stack and TLS. */
HIDDEN uintptr_t stop_dead_stack(uintptr_t lo, uintptr_t hi);

#endif
