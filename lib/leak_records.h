/* leak_records.h - the per-block records of leak checking (leak_records.c), kept only while
 * CONTIG_LEAKS is set (G.slow_only sends every allocation through the slow paths that call these).
 * Below the heaps, which call it; the scan and the report (leak.c) read it. */
#ifndef CONTIG_LEAK_RECORDS_H
#define CONTIG_LEAK_RECORDS_H

#include "common.h"

/* Called by the allocation slow paths (only while G.slow_only) for every block handed out, and for
 * a block realloc kept in place: records the caller's stack for p. The asked size itself stays in
 * heap.c's table (small blocks) and the page descriptor (large ones). A freed block needs no call:
 * its record is dead with its live bit and overwritten by the next allocation there. */
__attribute__((visibility("hidden"))) void leak_note_alloc(void *p, size_t asked);
/* The same for a block realloc kept in place, asked was bytes until now: its LEAK_USABLE mark
 * (below) stays; an unmarked block has the bytes it grows into zeroed. */
__attribute__((visibility("hidden"))) void leak_note_realloc(void *p, size_t was, size_t asked);
/* The same for a small block just taken from a free list: also zeroes the whole block (the list
 * link in its first word included), so that neither the link nor what an earlier block left there
 * is a stale pointer the scan follows, keeping a lost block reachable; the bytes past the asked
 * ones too, since realloc copies them when it moves the block. */
__attribute__((visibility("hidden"))) void leak_note_new(void *p, size_t asked);
/* p, once the dead stack below the caller that the allocation used is cleared (only while
 * G.slow_only): what every allocation entry that may have recorded a block returns, so that no
 * stale copy of the block's address stays where the program's later frames do not write. */
__attribute__((visibility("hidden"))) void *leak_scrubbed(void *p);

/* A record's stack id with this bit set: the program asked malloc_usable_size for the block, so it
 * may keep data, pointers too, in all of it; the scan then reads the usable bytes, while the report
 * still counts the asked ones. A new allocation there writes a plain id again. */
#define LEAK_USABLE 0x80000000u
/* Called by malloc_usable_size (only while G.slow_only) for a live block of the range: zeroes its
 * bytes past the asked ones (the program was never told it owned them, so nothing it wrote is
 * there, only what an earlier block left) and marks its record LEAK_USABLE. */
__attribute__((visibility("hidden"))) void leak_note_usable(void *p, size_t asked, size_t usable);

typedef struct leak_small {
	uint32_t stack[LIVE_BITS];          /* allocation stack id per block, by its index (0: none) */
} leak_small_t;                         /* (the check's marks are leak.c's own, one bit per block) */

typedef struct leak_dir {
	_Atomic(leak_small_t *) small;      /* PK_SMALL heads: the run's records; kept across reuse */
	uint32_t large_stack;               /* PK_LARGE heads: allocation stack id */
} leak_dir_t;

extern HIDDEN _Atomic(leak_dir_t *) leak_dir_ptr;
static inline leak_dir_t *leak_dir(void) { return atomic_load_explicit(&leak_dir_ptr, memory_order_acquire); }
HIDDEN void leak_records_fork_child(void);
HIDDEN leak_dir_t *leak_dir_make(void);        /* the directory, made on first use; NULL if it cannot be */

/* The head of the run holding pg (pg itself unless it is a later page of a live run). */
static inline page_t *leak_head_of(page_t *pg)
{
	return pg->kind == PK_CONT && pg->head_off <= page_idx(pg) ? pg - pg->head_off : pg;
}

#endif
