/* init.c - one allocation-free initialisation (safe when the first call is free(NULL) or calloc
 * from the dynamic loader) and the fork handlers. */
#include "init.h"
#include "region.h"
#include "heap.h"
#include "alloc.h"
#include "beacon.h"
#include "stack.h"
#include "fmt.h"
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <sys/auxv.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

extern char **environ;

/* remote_tag()'s key: from the 16 random bytes the kernel gives every process (AT_RANDOM), with
 * the top two bits 10, so that no tag is a canonical address. */
static uintptr_t tag_key(void)
{
	uint64_t k[2] = { 0x6a09e667f3bcc909ull, 0xbb67ae8584caa73bull };
	const void *r = (const void *)getauxval(AT_RANDOM);
	if (r) memcpy(k, r, sizeof k);
	uint64_t v = (k[0] ^ (k[1] << 1)) * 0x9e3779b97f4a7c15ull;
	return (uintptr_t)((v & ~(3ull << 62)) | (1ull << 63));
}

void contig_init_slow(void)
{
	int expect = 3;
	atomic_compare_exchange_strong(&G.state, &expect, 0);   /* a shadowed copy called after all */
	expect = 0;
	if (!atomic_compare_exchange_strong(&G.state, &expect, 1)) {
		/* Another thread is initialising: wait for it (it never allocates, so it finishes). */
		while (atomic_load_explicit(&G.state, memory_order_acquire) != 2) sched_yield();
		return;
	}
	config_defaults(&G.cfg);
	config_parse(&G.cfg, environ);
	G.slow_only = G.cfg.leaks != LEAKS_OFF;
	G.tag_key = tag_key();
	if (G.cfg.leaks != LEAKS_OFF || (G.cfg.stats != STATS_OFF && !G.cfg.stats_file[0]))
		report_fd_save();                   /* exit reports survive a closed stderr */
	G.base = G.cfg.base;
	if (region_init() == 0)
		G.size = G.npages << PAGE_SHIFT;     /* from here on, range_has() can say yes */
	beacon_publish();                       /* the beacon for `contig map PID` */
	heap_init_key();
	atomic_store_explicit(&G.state, 2, memory_order_release);
}

/* Whether the process's malloc is another copy of this library's (two copies preloaded from
 * different paths, or one preloaded and another linked under another name): every call the
 * program makes goes to that copy, and this one must not reserve the range under it (it did, when
 * its constructor ran first: the other copy found the range taken, reserved nothing, and every
 * malloc failed). A shadowed copy does nothing at all, at start or at exit. From the
 * constructor: the loader is up, and dlsym may allocate (from the other copy). */
static bool shadowed(void)
{
	Dl_info self, mall, api;
	void *m = dlsym(RTLD_DEFAULT, "malloc"), *o = dlsym(RTLD_DEFAULT, "contig_owns");
	if (!m || !o || !dladdr((void *)shadowed, &self) || !dladdr(m, &mall) || !dladdr(o, &api)) return false;
	return mall.dli_fbase != self.dli_fbase && api.dli_fbase == mall.dli_fbase;   /* another libcontig's */
}

__attribute__((constructor)) static void contig_constructor(void)
{
	if (atomic_load(&G.state) == 0 && shadowed()) {
		atomic_store(&G.state, 3);          /* (never 2: every entry point would init, and none runs) */
		return;
	}
	contig_ensure_init();
	stack_init();                            /* allocation stacks, under CONTIG_LEAKS only */
	pthread_atfork(alloc_fork_prepare, alloc_fork_parent, alloc_fork_child);
}
