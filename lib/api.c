/* api.c - the public contig_* API (contig.h): ownership, the range, statistics, purging, the
 * collision callback, the leak check, the version; and what runs at exit. The top of the core. */
#include "init.h"
#include "heap.h"
#include "range.h"
#include "region.h"
#include "stats.h"
#include "leak.h"
#include "pagemap.h"
#include "stack.h"
#include <errno.h>
#include <string.h>

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
	n &= ~(sizeof(uint64_t) - 1);          /* whole fields only (every field ends on 8 bytes) */
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

EXPORT void contig_set_collision_callback(contig_collision_fn fn, void *arg)
{
	contig_ensure_init();
	range_set_collision_callback(fn, arg);
}

EXPORT int contig_leak_check(size_t *bytes, size_t *blocks)
{
	contig_ensure_init();
	int r = leak_check(0, bytes, blocks);
	if (r != 0) {
		errno = r == -1 ? ENOTSUP : EAGAIN;
		return -1;
	}
	return 0;
}

/* At exit, after the program's own exit handlers (this is the library's destructor): the page map
 * dump, the statistics, then the leak check, which under CONTIG_LEAKS=error may end the process. */
__attribute__((destructor)) static void contig_at_exit(void)
{
	if (atomic_load(&G.state) != 2) return;
	pagemap_exit();
	if (G.cfg.stats == STATS_OFF && G.cfg.leaks == LEAKS_OFF) return;
	heap_collect_all();
	stats_report_exit();
	if (G.cfg.leaks != LEAKS_OFF) {
		leak_check(1, NULL, NULL);
		stack_finish();             /* threads still running take no more stacks */
	}
}
