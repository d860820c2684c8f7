/* leak.h - leak checking (CONTIG_LEAKS): per-block allocation records, the conservative
 * reachability scan, suppressions and the report. Costs nothing while CONTIG_LEAKS is unset:
 * the fast paths are switched off (G.slow_only) only when it is set. */
#ifndef CONTIG_LEAK_H
#define CONTIG_LEAK_H

#include <stddef.h>
#include <stdint.h>

/* Called by the allocation slow paths for every block handed out / freed while leaks are tracked. */
__attribute__((visibility("hidden"))) void leak_note_alloc(void *p, size_t asked);
__attribute__((visibility("hidden"))) void leak_note_free(void *p);

/* Scan, report, and return the leaked bytes and allocations (after suppressions).
 * at_exit: the final check (may set the exit status under CONTIG_LEAKS=error). */
__attribute__((visibility("hidden"))) void leak_check(int at_exit, size_t *bytes, size_t *blocks);

#endif
