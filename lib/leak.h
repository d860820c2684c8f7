/* leak.h - leak checking (CONTIG_LEAKS): per-block allocation records, the conservative
 * reachability scan, suppressions and the report. Costs nothing while CONTIG_LEAKS is unset:
 * the fast paths are switched off (G.slow_only) only when it is set. */
#ifndef CONTIG_LEAK_H
#define CONTIG_LEAK_H

#include <stddef.h>
#include <stdint.h>

/* Called by the allocation slow paths (only while G.slow_only) for every block handed out, and for
 * a block realloc kept in place: records the caller's stack for p. The asked size itself stays in
 * heap.c's table (small blocks) and the page descriptor (large ones). A freed block needs no call:
 * its record is dead with its live bit and overwritten by the next allocation there. */
__attribute__((visibility("hidden"))) void leak_note_alloc(void *p, size_t asked);
/* The same for a small block just taken from a free list: also clears the list link the block
 * still holds in its first word, which the scan would otherwise follow to the next free block
 * (and to whichever block the program gets there next). */
__attribute__((visibility("hidden"))) void leak_note_new(void *p, size_t asked);

/* Called for every chunk of the library's own metadata (meta_alloc): the scan must not take it
 * for program memory, or every block a descriptor points to would look reachable. */
__attribute__((visibility("hidden"))) void leak_note_meta(const void *p, size_t len);

/* Scan, report on stderr, and store the leaked bytes and allocations (after suppressions) in
 * *bytes and *blocks (either may be NULL). at_exit: the final check, which under
 * CONTIG_LEAKS=error ends the process with status 23 when a leak remains.
 * Returns 0, or -1 when leaks are not tracked (CONTIG_LEAKS unset; both counts 0). */
__attribute__((visibility("hidden"))) int leak_check(int at_exit, size_t *bytes, size_t *blocks);

/* ---- the parts the unit tests drive on synthetic memory ---- */
/* Match one suppression pattern ('*' wildcards; a substring match unless anchored with a leading
 * '^' or a trailing '$') against s. */
__attribute__((visibility("hidden"))) int leak_pattern_match(const char *pat, const char *s);

#endif
