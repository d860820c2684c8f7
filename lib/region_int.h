/* region_int.h - what the page layer's own files (runs.c, purge.c, mmap_pages.c) share: the free
 * bins and the committed accounting. Included by nothing outside that layer. */
#ifndef CONTIG_REGION_INT_H
#define CONTIG_REGION_INT_H

#include "region.h"
#include "range.h"

#define NBINS 64
#define CLEAN_STAMP UINT32_MAX      /* stamp of a free run with no dirty page */

typedef struct region_state {
	/* Free runs by size, in two sets: [1] recycled runs (freed since the range grew; their
	 * dirty pages may have been purged since), [0] fresh ones. A block's fit looks in the
	 * recycled set first: memory already committed is used again before fresh pages are
	 * touched, so a program that frees and allocates runs of varying sizes keeps its resident
	 * set near its live set instead of walking through the range. Purging leaves a run in its
	 * set, so the fit never depends on when the purger ran. */
	uint32_t bin[2][NBINS];     /* first free run of each bin (index + 1) */
	uint64_t binmask[2];        /* bit b set when bin b is non-empty */
	size_t committed;           /* pages live or dirty */
	size_t committed_peak;      /* pages */
	size_t purged;              /* pages returned to the OS so far */
	size_t limit;               /* pages; 0 = none */
	size_t limit_hits;
	size_t large_bytes, large_blocks;
	uint64_t large_allocs;      /* large blocks ever made */
	size_t mmap_bytes, fallback_bytes;
	uint64_t next_purge;        /* ms clock of the next due purge; UINT64_MAX none */
	uint32_t dirty_runs;        /* recycled free runs that may hold dirty pages (stamp not CLEAN_STAMP) */
	uint64_t *bitmaps;          /* unused metadata chunks, linked through remote_t.chunk_next */
	page_t *huge[HUGE_PAGES];   /* one-page small runs of the open huge chunk no heap has taken yet,
	                               lowest address last (region_alloc_run, huge.c) */
	unsigned nhuge;
	/* A big process's next chunk, cut one ahead of need and faulted in by the purger, so that
	 * the thread that takes it does not stop for the kernel to clear 2 MiB (huge.c) */
	uint32_t chunks_cut;        /* huge chunks opened so far (cut ahead or on demand) */
	page_t *ahead;              /* a chunk faulted in and ready, not yet opened; NULL: none */
	page_t *filling;            /* the chunk the purger is to fault in; NULL: none */
	bool fill_busy;             /* the purger is faulting it in, without the lock: it is the
	                               purger's alone until then (huge_fill_wait_locked) */
} region_state_t;

extern HIDDEN region_state_t R;     /* runs.c; under the range lock */

static inline page_t *P(size_t idx) { return &G.pages[idx]; }

/* runs.c */
HIDDEN void run_insert_free(size_t idx, size_t n, uint32_t stamp, bool dirty);
HIDDEN void bin_insert(size_t idx);
HIDDEN void bin_remove(size_t idx);
HIDDEN size_t free_run_holding(size_t i);
HIDDEN void release_top_locked(bool always);     /* under RLIMIT_AS: free runs at the top unmapped */
HIDDEN bool huge_stash_release_locked(void);   /* the open huge chunk's untaken runs and the
                                                  chunk ahead (not one being faulted in) become
                                                  free runs; true when the purger is wanted */

/* huge.c */
#define AHEAD_AFTER 32u             /* chunks opened (64 MiB of small runs) before one is cut ahead */
HIDDEN void huge_unadvise_locked(size_t a, size_t b);   /* pages [a, b) lose their chunks' advice */
HIDDEN bool huge_ahead_wanted_locked(void);     /* whether the next chunk is cut ahead of need */
HIDDEN void huge_fill(uintptr_t chunk);         /* fault in a whole chunk (the purger, unlocked) */
HIDDEN void huge_chunk_free_locked(page_t *c, bool *start);  /* its runs become free runs */

/* purge.c */
HIDDEN void purge_init_limit(void);
HIDDEN size_t purge_locked(bool all);
HIDDEN void maybe_purge_locked(void);
HIDDEN void purge_due_locked(uint32_t stamp); /* a free run just became dirty, freed at stamp */
HIDDEN bool limit_make_room_locked(size_t n);
HIDDEN bool purger_wanted_locked(void);
HIDDEN bool purger_may_run(void);              /* a purger can be started in this process */
HIDDEN void purger_wake_locked(void);          /* new work for a waiting purger */
HIDDEN void huge_fill_wait_locked(void);       /* until no chunk is being faulted in (drops the
                                                  lock meanwhile) */
HIDDEN void purger_start(void);
HIDDEN void purge_fork_child(void);

#endif
