/* range.h - the range layer (range.c): the page descriptors, the reservation at start, growth
 * into the range, foreign mappings and collisions (start, growth, the maps audit), the library's
 * own metadata, and the one lock every page-level change is made under. Sits on os and maps;
 * knows nothing of runs, heaps or blocks. */
#ifndef CONTIG_RANGE_H
#define CONTIG_RANGE_H

#include "common.h"
#include <time.h>

/* Map the descriptors, find what is already mapped in the range, reserve what RLIMIT_AS allows.
 * Sets G.pages and G.npages. 0, or -1 when nothing can be served. */
HIDDEN int range_init(void);

/* The lock over the descriptors and everything the page layer keeps. */
HIDDEN void range_lock(void);
HIDDEN void range_unlock(void);
HIDDEN void range_fork_child(void);        /* the child's copy of the lock is made new */
HIDDEN void range_wait(pthread_cond_t *c, const struct timespec *until);   /* with the lock held */

/* Metadata outside the range: zeroed, 64-byte aligned, never freed. */
HIDDEN void *meta_alloc(size_t bytes);
HIDDEN void *meta_alloc_locked(size_t bytes);
/* The mappings metadata came from, so that the leak scan can tell them from the program's memory
 * (every block a descriptor or a record points to would look reachable). Spans only grow. */
typedef struct range_span { uintptr_t lo, hi; } range_span_t;
HIDDEN size_t range_meta_spans(const range_span_t **spans);
HIDDEN void range_meta_add(const void *p, size_t len);   /* a mapping the library made for itself elsewhere */

/* Pages [0, frontier) are usable, in use or foreign; [0, reserved_end) lie in our reservation. */
HIDDEN size_t range_frontier(void);
HIDDEN size_t range_reserved_end(void);
HIDDEN const size_t *range_frontier_addr(void);   /* for the page map beacon (pagemap.c) */

/* With the lock held: make more of the range usable so that a run of n pages may fit (geometric
 * steps; foreign pages on the way are skipped and recorded). Each new usable span [idx, idx+n)
 * is handed to add, in address order. 0 when something was added, -1 when nothing can be. */
typedef void (*range_usable_fn)(size_t idx, size_t n);
HIDDEN int range_grow(size_t n, range_usable_fn add);
/* Under RLIMIT_AS (range_as_limit: the limit in bytes, 0 none): with the lock held, pages
 * [idx, frontier), free pages out of the bins, stop being ours and are unmapped with the
 * reservation above them, so that the program's own mappings (a thread's stack, a file: glibc
 * maps those itself, where no interposer sees) have the address space again; the frontier moves
 * down to idx and growth maps them again, checked. */
HIDDEN uint64_t range_as_limit(void);
HIDDEN size_t range_mapped_pages(void);            /* pages of the range we map now, reserved or usable */
HIDDEN void range_release_top_locked(size_t idx);
/* The lowest page that may be released: 0, or the end of our reservation when a foreign mapping
 * lies in the part of it above the frontier (our reservation stays whole below one). */
HIDDEN size_t range_release_floor_locked(void);

/* With the lock held: our own mapping back over pages [a, b) (the caller unmapped them; below the
 * frontier they come back PROT_NONE, flagged PF_NONE), and PF_NONE pages made usable again. */
HIDDEN void range_restore(size_t a, size_t b);
HIDDEN void range_open(size_t a, size_t b);
HIDDEN void range_none_forget(size_t a, size_t b);

/* Collisions: record one found elsewhere (takes the lock), and pass new ones to the callback
 * (call without the lock: the callback may allocate). */
HIDDEN void range_count_collision(uintptr_t addr, size_t len, contig_route_t route);
HIDDEN void range_notify_collisions(void);
HIDDEN void range_set_collision_callback(contig_collision_fn fn, void *arg);
/* Auto mode: give back unused reservation after RLIMIT_AS refused the program a mapping of len
 * bytes outside the heap; whether anything was given back. Takes the lock. */
HIDDEN bool range_yield_reservation(size_t len);
/* Whether addr (in the range, on a page never made usable) lies in a foreign mapping: looks in
 * /proc/self/maps, records it. Takes the lock. */
HIDDEN bool range_foreign_at(uintptr_t addr);

typedef struct range_stats {
	size_t reserved;                /* bytes reserved PROT_NONE at start */
	size_t mapped;                  /* bytes below the frontier */
	size_t collisions;              /* found so far */
	contig_collision_t coll[CONTIG_STATS_COLLISIONS];
	int mode;                       /* MODE_* in force */
} range_stats_t;
HIDDEN void range_get_stats_locked(range_stats_t *rs);

#endif
