/* region.h - the page layer's interface: runs of 64 KiB pages inside the range (runs.c), purging
 * and the limit on committed pages (purge.c), and the pages of served mappings (mmap_pages.c).
 * Above the range layer, below the heaps, alloc and mmap. Everything runs under the range lock. */
#ifndef CONTIG_REGION_H
#define CONTIG_REGION_H

#include "common.h"
#include "range.h"

/* ---- runs (runs.c) ---- */
enum {
	RUN_ZERO = 1,              /* caller needs the memory zeroed (PK_MMAP: decommitted instead) */
	RUN_SPARE = 2,             /* wanted ahead of need: only pages the limit leaves room for
	                              without purging, and a refusal is no limit hit */
	RUN_CHUNK = 4,             /* PK_SMALL, HUGE_PAGES pages aligned to HUGE_SIZE, made into that
	                              many one-page runs marked PF_HUGE (huge.c); like RUN_SPARE for
	                              the limit, but the range may grow for it */
	RUN_RESERVE = 8,           /* PK_MMAP with RUN_ZERO, for a PROT_NONE reservation: its pages
	                              are marked PF_RESV, not committed, and the limit does not apply
	                              (region_resize: the clean pages a reservation grows by) */
};
HIDDEN int region_init(void);      /* the range, then the limit */
HIDDEN page_t *region_alloc(size_t npages, uint8_t kind, int flags);
HIDDEN page_t *region_alloc_aligned(size_t npages, size_t align, uint8_t kind, int flags);
HIDDEN page_t *region_alloc_run(bool big, int flags);   /* a one-page PK_SMALL run for a heap */
HIDDEN void region_free(page_t *head);
HIDDEN void region_free_since(page_t *head, uint64_t since_ms);  /* its pages freed at since (os_now_ms; 0: now) */
HIDDEN void region_purger_kick(void);      /* start the purger if a free under a lock wanted it */
HIDDEN int region_resize(page_t *head, size_t newpages, int flags);   /* flags: 0 or RUN_RESERVE */
HIDDEN void region_fork_child(void);
HIDDEN void region_count_fallback(size_t bytes);

typedef struct region_stats {
	range_stats_t range;            /* the range layer's part: reserved, mapped, collisions, mode */
	size_t committed, committed_peak, purged, limit;   /* bytes */
	size_t limit_hits;
	size_t large_bytes, large_blocks, mmap_bytes, fallback_bytes;
	uint64_t large_allocs;          /* large blocks ever made (calls_malloc counts them here) */
} region_stats_t;
HIDDEN void region_get_stats(region_stats_t *rs);

/* ---- purging and the limit (purge.c) ---- */
HIDDEN size_t region_purge(bool all);              /* bytes returned to the OS */
HIDDEN void region_purge_block(page_t *head);      /* a cached freed large block's pages, in place */
HIDDEN bool region_recommit_block(page_t *head);   /* and handed out again: false at CONTIG_LIMIT */
/* The heaps' decay (heap.c): runs the heaps keep for a while (an exited thread's, for the next
 * thread) go back when fn says, called by the purger with no library lock held: fn(now) gives
 * back what is due and returns when it is next called (UINT64_MAX: not until asked again). */
HIDDEN void region_set_decay(uint64_t (*fn)(uint64_t now));
HIDDEN bool region_decay_ok(void);                  /* whether the purger can run a decay here */
HIDDEN void region_decay_at(uint64_t due_ms);      /* have fn called at due (os_now_ms), or soon after */
HIDDEN void region_set_limit_pages(size_t pages);  /* 0 = none */

/* ---- huge pages (huge.c) ---- */
#define HUGE_SIZE   ((size_t)2 << 20)                   /* a transparent huge page */
#define HUGE_PAGES  (HUGE_SIZE >> PAGE_SHIFT)           /* 64 KiB pages in one: 32 */
HIDDEN bool region_huge_ok(void);                  /* THP may be asked for (not [never], not refused) */
HIDDEN void region_huge_advise(uintptr_t chunk);    /* MADV_HUGEPAGE on a chunk RUN_CHUNK made; no lock */

/* ---- pages of served mappings (mmap_pages.c) ---- */
enum { PC_FREE, PC_UNUSED, PC_HEAP, PC_MMAP, PC_FIXED, PC_FOREIGN,
       PC_CACHED };   /* inside only: region_classify* give the caches back and look again */
HIDDEN void region_set_cache_flush(bool (*fn)(void));    /* the heaps': every cache to the runs,
                                                             whether any held a block */
HIDDEN int region_classify(size_t i, page_t **head);
HIDDEN int region_classify_span(size_t i, page_t **head, size_t *next);   /* and the page past its run */
HIDDEN void region_mmap_release(page_t *h, size_t a, size_t b);
HIDDEN int region_fixed_take(size_t a, size_t b);
HIDDEN void region_fixed_give_back(size_t a, size_t b);   /* fixed pages [a, b) unmapped whole */
HIDDEN int region_mmap_commit(size_t a, size_t b);      /* reserved pages made accessible: 0, or -1 at the limit */
HIDDEN void region_mmap_uncommit(size_t a, size_t b);   /* whole pages made PROT_NONE again by a fixed mapping */

#endif
