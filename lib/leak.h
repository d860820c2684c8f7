/* leak.h - leak checking (CONTIG_LEAKS): the check the library and the API call, the conservative
 * reachability scan (leak.c), whose suppressions and report are leak_report.h's; the records kept
 * as blocks are handed out are leak_records.h's. Costs nothing while CONTIG_LEAKS is unset:
 * the fast paths are switched off (G.slow_only) only when it is set. */
#ifndef CONTIG_LEAK_H
#define CONTIG_LEAK_H

#include <stddef.h>
#include <stdint.h>

/* Scan, report on stderr, and store the leaked bytes and allocations (after suppressions) in
 * *bytes and *blocks (either may be NULL). at_exit: the final check, which under
 * CONTIG_LEAKS=error ends the process with status 23 when a leak remains.
 * Returns 0; -1 when leaks are not tracked (CONTIG_LEAKS unset; both counts 0); -2 when the check
 * was skipped (a line on stderr says why; both counts 0). */
__attribute__((visibility("hidden"))) int leak_check(int at_exit, size_t *bytes, size_t *blocks);

#endif
