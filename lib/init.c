/* init.c - one allocation-free initialisation (safe when the first call is free(NULL) or calloc
 * from the dynamic loader), fork handlers, the exit-time reports, and the public contig_* API. */
#include "internal.h"
#include "pagemap.h"
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

extern char **environ;

contig_global_t G;

void contig_init_slow(void)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong(&G.state, &expect, 1)) {
		/* Another thread is initialising: wait for it (it never allocates, so it finishes). */
		while (atomic_load_explicit(&G.state, memory_order_acquire) != 2) sched_yield();
		return;
	}
	config_defaults(&G.cfg);
	config_parse(&G.cfg, environ);
	G.slow_only = G.cfg.leaks != LEAKS_OFF;
	G.base = G.cfg.base;
	if (region_init() == 0)
		G.size = G.npages << PAGE_SHIFT;     /* from here on, range_has() can say yes */
	pagemap_publish();                       /* the beacon for `contig map PID` */
	heap_init_key();
	atomic_store_explicit(&G.state, 2, memory_order_release);
}

__attribute__((constructor)) static void contig_constructor(void)
{
	contig_ensure_init();
	pthread_atfork(heap_fork_prepare, heap_fork_parent, heap_fork_child);
}

__attribute__((destructor)) static void contig_destructor(void)
{
	stats_report_exit();
}

/* ---- public API ---- */
EXPORT int contig_owns(const void *p) { return range_has(p); }

EXPORT void *contig_base(void)
{
	contig_ensure_init();
	return (void *)G.cfg.base;
}

EXPORT size_t contig_size(void)
{
	contig_ensure_init();
	return G.size;
}

EXPORT int contig_get_stats(contig_stats_t *st)
{
	if (!st || st->size < offsetof(contig_stats_t, calls_malloc)) { errno = EINVAL; return -1; }
	contig_ensure_init();
	contig_stats_t full;
	full.size = sizeof full;
	stats_collect(&full);
	size_t n = st->size < sizeof full ? st->size : sizeof full;
	memcpy(st, &full, n);
	st->size = n;
	return 0;
}

EXPORT size_t contig_purge(void)
{
	contig_ensure_init();
	heap_collect_all();
	return region_purge(true);
}

EXPORT const char *contig_version(void) { return CONTIG_VERSION_STRING; }
