/* t-leak.c MODE [STATUS] - programs for leaks.sh; each prints one line on stdout and returns
 * STATUS (default 0). Blocks are dropped by overwriting their only pointer, in functions that
 * are not inlined, so that no copy stays in a live frame or register.
 *   direct    one 50-byte block leaked from make_direct()
 *   indirect  a 24-byte block leaked, pointing to a 40-byte one (direct 24, indirect 40)
 *   global    a 100-byte block held by a global to the end (not a leak) and a freed one
 *   suppress  50 bytes from make_direct() and 77 from suppressed_leaker()
 *   thread    a 64-byte block held only by a thread still running at exit (not a leak)
 *   api       contig_leak_check() before, with 3 blocks of 10 bytes hidden, and after freeing
 *             them: prints "api: B0 N0 / B1 N1 / B2 N2 rc"
 *   busy      4 threads allocate, free and hand blocks to each other (remote frees) while
 *             main exits: their blocks are held by their stacks and registers, no leak
 *   exiter    a thread calls exit() while main, blocked in pthread_join, holds a block only
 *             in its own frame: no leak (main is stopped and its stack scanned)
 *   mapped    blocks held only from a private mapping made read-only after the store and from
 *             a shared anonymous mapping: no leak (both are the program's memory)
 *   clean     frees everything */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <unistd.h>

void *volatile holder;                 /* volatile: the compiler may not drop the stores */
void *volatile kept;
uintptr_t volatile hidden[3];          /* pointers xor'ed with MASK: invisible to the scan */
#define MASK ((uintptr_t)0x5a5a5a5a5a5a5a5aull)

__attribute__((noinline)) static void make_direct(void)
{
	holder = malloc(50);
	memset(holder, 1, 50);
	holder = NULL;
}

__attribute__((noinline)) void suppressed_leaker(void);
__attribute__((noinline)) void suppressed_leaker(void)
{
	holder = malloc(77);
	memset(holder, 2, 77);
	holder = NULL;
}

__attribute__((noinline)) static void make_indirect(void)
{
	void **parent = malloc(24);
	memset(parent, 0, 24);
	parent[1] = malloc(40);
	memset(parent[1], 3, 40);
	holder = parent;
	holder = NULL;
}

/* Run fn 16 KiB below the caller, inside what clobber() overwrites later: the copies fn and
 * malloc leave in padding and register save slots must not survive into the exit path. */
__attribute__((noinline)) static void at_depth(void (*fn)(void))
{
	volatile char pad[16384];
	pad[0] = 0;
	fn();
	pad[sizeof pad - 1] = 0;
}

/* Overwrite the dead stack below us, where the callees above left their pointers. */
__attribute__((noinline)) static void clobber(void)
{
	char junk[65536];
	memset(junk, 0, sizeof junk);
	__asm__ volatile("" : : "r"(junk) : "memory");     /* the stores may not be dropped */
}

static void *run_thread(void *arg)
{
	void *volatile mine = malloc(64);           /* only in this frame */
	memset(mine, 4, 64);
	*(volatile int *)arg = 1;
	for (;;) pause();
	return mine;
}

__attribute__((noinline)) static void hide_three(void)
{
	for (int i = 0; i < 3; i++) {
		void *p = malloc(10);
		memset(p, 6, 10);
		hidden[i] = (uintptr_t)p ^ MASK;
	}
}

#define BUSY_SLOTS 64
static void *volatile exchange[BUSY_SLOTS];    /* blocks passed between the busy threads */

static void *run_busy(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	void *mine[BUSY_SLOTS] = { 0 };
	for (;;) {
		seed = seed * 1103515245u + 12345u;
		unsigned i = (seed >> 8) % BUSY_SLOTS;
		free(mine[i]);
		mine[i] = malloc(16 + (seed >> 20) % 3000);
		if (mine[i]) memset(mine[i], 7, 16);
		/* swap one with another thread: the other side frees it remotely later */
		void *theirs = __atomic_exchange_n(&exchange[i], mine[i], __ATOMIC_ACQ_REL);
		mine[i] = theirs;
	}
	return NULL;
}

static void *run_short(void *arg)
{
	void *p = malloc(1000);
	memset(p, 1, 1000);
	free(p);
	return arg;
}

/* Swap blocks, one in five of 200-300 KB (page runs), through shared slots without pause: every
 * block is in a slot or in a thread's hands, never leaked. */
static void *volatile swap_slot[64];

static void *run_swap(void *arg)
{
	unsigned r = (unsigned)(uintptr_t)arg * 77u + 1u;
	for (;;) {
		r = r * 1103515245u + 12345u;
		unsigned i = (r >> 8) % 64;
		size_t n = (r >> 16) % 5 ? (r >> 20) % 300 : 200000 + (r >> 12) % 100000;
		void *p = malloc(n);
		free(__atomic_exchange_n(&swap_slot[i], p, __ATOMIC_ACQ_REL));
	}
	return NULL;
}

static void *run_ender(void *arg)
{
	usleep((useconds_t)(uintptr_t)arg);
	exit(3);
}

/* Globals, and below them in the same bss a thread's stack the program made of a static array:
 * the thread's stack pointer lies in the bss, above the globals, which stay roots. */
static struct {
	void *volatile keep[16];
	char stack[1 << 17] __attribute__((aligned(4096)));
} static_area;

static void *run_on_static_stack(void *arg)
{
	*(volatile int *)arg = 1;
	for (;;) pause();
	return NULL;
}

static void *run_exiter(void *arg)
{
	(void)arg;
	usleep(20000);
	printf("t-leak: exiter done\n");
	exit(0);
}

typedef int (*check_fn)(size_t *, size_t *);

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "clean";
	int status = argc > 2 ? atoi(argv[2]) : 0;
	if (strcmp(mode, "direct") == 0) at_depth(make_direct);
	else if (strcmp(mode, "direct-late") == 0) {    /* the reader of a pipe has time to go */
		at_depth(make_direct);
		usleep(300000);
	}
	else if (strcmp(mode, "indirect") == 0) at_depth(make_indirect);
	else if (strcmp(mode, "suppress") == 0) { at_depth(make_direct); at_depth(suppressed_leaker); }
	else if (strcmp(mode, "global") == 0) {
		kept = malloc(100);
		memset(kept, 5, 100);
		free(malloc(33));
	} else if (strcmp(mode, "thread") == 0) {
		pthread_t t;
		volatile int ready = 0;
		if (pthread_create(&t, NULL, run_thread, (void *)&ready) != 0) return 99;
		while (!ready) usleep(1000);
	} else if (strcmp(mode, "busy") == 0) {
		pthread_t t;
		for (int i = 0; i < 4; i++)
			if (pthread_create(&t, NULL, run_busy, (void *)(uintptr_t)(i + 1)) != 0) return 99;
		usleep(100000);
	} else if (strcmp(mode, "largeswap") == 0) {
		/* a thread calls exit(3) after STATUS microseconds while the others swap blocks: one
		 * stopped inside the free of a page run holds no pointer to it any more */
		pthread_t t;
		for (uintptr_t i = 1; i < 4; i++)
			if (pthread_create(&t, NULL, run_swap, (void *)i) != 0) return 99;
		if (pthread_create(&t, NULL, run_ender, (void *)(uintptr_t)status) != 0) return 99;
		run_swap(NULL);
	} else if (strcmp(mode, "setstack") == 0) {
		for (int i = 0; i < 16; i++) static_area.keep[i] = malloc(100 + (size_t)i);
		pthread_attr_t at;
		pthread_t t;
		volatile int ready = 0;
		pthread_attr_init(&at);
		pthread_attr_setstack(&at, static_area.stack, sizeof static_area.stack);
		if (pthread_create(&t, &at, run_on_static_stack, (void *)&ready) != 0) return 99;
		while (!ready) usleep(1000);
	} else if (strcmp(mode, "detached") == 0) {
		/* a leak, then detached threads that end as main returns: some are gone, or going,
		 * while the check lists and signals them */
		at_depth(make_direct);
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		for (int i = 0; i < 8; i++) {
			pthread_t t;
			if (pthread_create(&t, &at, run_short, NULL) != 0) return 99;
		}
	} else if (strcmp(mode, "nofd") == 0) {
		/* blocks held by a global, and every file descriptor in use at exit: the check cannot
		 * read /proc/self/maps, and must say so rather than call the blocks leaked */
		kept = malloc(100);
		memset(kept, 5, 100);
		struct rlimit rl = { 64, 64 };
		setrlimit(RLIMIT_NOFILE, &rl);
		while (open("/dev/null", O_RDONLY) >= 0) {}
	} else if (strcmp(mode, "exiter") == 0) {
		pthread_t t;
		void *volatile local = malloc(80);
		memset(local, 8, 80);
		if (pthread_create(&t, NULL, run_exiter, NULL) != 0) return 99;
		pthread_join(t, NULL);
		free(local);
		return 96;
	} else if (strcmp(mode, "mapped") == 0) {
		void **ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		void **sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (ro == MAP_FAILED || sh == MAP_FAILED) return 95;
		ro[7] = malloc(90);
		sh[9] = malloc(91);
		if (mprotect(ro, 4096, PROT_READ) != 0) return 94;
	} else if (strcmp(mode, "sparse") == 0) {
		/* 8 GiB of address space with three pages written, one of them holding the only
		 * pointer to a block: a runtime's reserved heap. Reading every page took 2.6 s a GiB
		 * (and past 30 s the check was abandoned); only resident pages need reading. */
		size_t len = (size_t)8 << 30;
		char *big = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (big == MAP_FAILED) return 95;
		big[0] = 1;
		big[len - 1] = 1;
		void *held = malloc(92);
		memcpy(big + len / 2 + 8, &held, sizeof held);
	} else if (strcmp(mode, "api") == 0) {
		check_fn check = (check_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "contig_leak_check");
		size_t b[3] = { 9, 9, 9 }, n[3] = { 9, 9, 9 };
		if (!check) { printf("api: no contig_leak_check\n"); return 98; }
		int r0 = check(&b[0], &n[0]);
		at_depth(hide_three);
		clobber();
		int r1 = check(&b[1], &n[1]);
		for (int i = 0; i < 3; i++) free((void *)(hidden[i] ^ MASK));
		int r2 = check(&b[2], &n[2]);
		printf("api: %zu %zu / %zu %zu / %zu %zu %d\n", b[0], n[0], b[1], n[1], b[2], n[2],
		       r0 == r1 && r1 == r2 ? r0 : 97);
		return status;
	}
	clobber();
	printf("t-leak: %s done\n", mode);
	return status;
}
