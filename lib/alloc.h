/* alloc.h - the malloc family on top of the heaps and the page runs (alloc.c): what preload/
 * forwards the libc entry points to. */
#ifndef CONTIG_ALLOC_H
#define CONTIG_ALLOC_H

#include <string.h>
#include "common.h"
#include "heap.h"

HIDDEN void *alloc_malloc(size_t n);
HIDDEN void *alloc_calloc(size_t n, size_t m);
HIDDEN void *alloc_realloc(void *p, size_t n);
HIDDEN void *alloc_reallocarray(void *p, size_t n, size_t m);
HIDDEN void alloc_free(void *p);
HIDDEN void alloc_free_sized(void *p, size_t n);
HIDDEN void alloc_delete_sized(void *p, size_t n);      /* C++ sized delete */
HIDDEN void alloc_free_aligned_sized(void *p, size_t align, size_t n);
HIDDEN void *alloc_memalign(size_t align, size_t n);
HIDDEN int alloc_posix_memalign(void **out, size_t align, size_t n);
HIDDEN void *alloc_aligned_alloc(size_t align, size_t n);
HIDDEN void *alloc_valloc(size_t n);
HIDDEN void *alloc_pvalloc(size_t n);
HIDDEN size_t alloc_usable_size(const void *p);
HIDDEN int alloc_trim(size_t pad);
HIDDEN void alloc_fallback_calls(uint64_t *made, uint64_t *freed);  /* CONTIG_FALLBACK=system blocks */
HIDDEN void alloc_fork_prepare(void);   /* pthread_atfork's three: every lock of the library */
HIDDEN void alloc_fork_parent(void);
HIDDEN void alloc_fork_child(void);

/* ---- the fast paths, inline so that preload's malloc and free are their bodies (a call or
 * jump less on every call); what they cannot serve goes to alloc.c. ---- */
HIDDEN void *alloc_malloc_slow(size_t n);
HIDDEN void alloc_free_slow(page_t *pg, void *p);      /* a pointer that starts no block of a small run's head page */
HIDDEN void alloc_free_outside(void *p);               /* a pointer outside the range */

static inline void *alloc_malloc_inline(size_t n)
{
	void *p = heap_malloc_fast(n);
	if (likely(p != NULL)) return p;
	return alloc_malloc_slow(n);
}

HIDDEN void *alloc_new_slow(size_t n, void *(*on_fail)(size_t));

static inline void *alloc_new_inline(size_t n, void *(*on_fail)(size_t))
{
	void *p = heap_malloc_fast(n);
	if (likely(p != NULL)) return p;
	return alloc_new_slow(n, on_fail);
}

/* realloc(NULL, n) served as malloc's fast path serves malloc(n): Lua's and other interpreters'
 * allocators make every block that way. A block from the fast path means a heap of the thread's
 * own (heap_none's pages are all empty), whose counts say a realloc made it. */
static inline void *alloc_realloc_inline(void *p, size_t n)
{
	if (p == NULL) {
		void *q = heap_malloc_fast(n);
		if (likely(q != NULL)) {
			heap_t *h = heap_tls;
			h->n_realloc++;
			h->n_rmade++;
			return q;
		}
	}
	return alloc_realloc(p, n);
}

/* malloc_usable_size(p) for p that starts a block of a small run's head page (only those have a
 * non-zero capacity): its size if it is live and no other thread has freed it (live_unfreed).
 * Servers that count their memory (Redis) ask for every block they make and free. The rest, and
 * every call while leaks are checked, is alloc_usable_size's. */
static inline size_t alloc_usable_size_inline(const void *p)
{
	if (likely(range_has(p))) {
		page_t *pg = page_of(p);
		uint64_t bit = block_index(pg, p);
		if (likely(bit < pg->capacity) && likely(!G.slow_only) && likely(live_unfreed(pg, bit)))
			return pg->block_size;
	}
	return alloc_usable_size(p);
}

static inline void alloc_free_inline(void *p)
{
	if (unlikely(!range_has(p))) { alloc_free_outside(p); return; }
	page_t *pg = page_of(p);
	/* large blocks, later pages of runs, free pages and pointers that start no block */
	if (unlikely(!heap_free_block1(pg, p))) alloc_free_slow(pg, p);
}

/* calloc of a small block: malloc's fast path and a memset of the bytes asked for (a block from
 * the free lists holds old bytes, and so may a freshly carved one in a page used before). An
 * overflowing product, and everything the fast path does not serve, is alloc_calloc's. */
static ALWAYS_INLINE void *alloc_calloc_inline(size_t n, size_t m)
{
	size_t total;
	if (likely(!__builtin_mul_overflow(n, m, &total))) {
		void *p = heap_malloc_fast(total);
		if (likely(p != NULL)) return memset(p, 0, total);
	}
	return alloc_calloc(n, m);
}

/* memalign and its kind for a power-of-two alignment up to 64 bytes (0 counts as one, as for
 * memalign) and a size up to ONEPAGE_MAX, through malloc's fast path: the size rounded up to the alignment names a class whose every
 * block is so aligned (runs and their colours start at multiples of 64 bytes, and the class of
 * such a size is a multiple of the alignment: test-classes checks every size), the class the
 * slow way's search (alloc_memalign) finds. NULL when the fast path cannot serve it. */
static ALWAYS_INLINE void *alloc_memalign_fast(size_t align, size_t n)
{
	if (likely(align <= 64 && (align & (align - 1)) == 0 && n <= ONEPAGE_MAX)) {
		size_t m = align <= ALIGN_MIN ? n : n ? (n + align - 1) & ~(align - 1) : align;
		return heap_malloc_fast(m);
	}
	return NULL;
}

/* memalign's way: the fast path when it serves, else alloc_memalign (which rounds an alignment
 * that is no power of two up). */
static ALWAYS_INLINE void *alloc_memalign_inline(size_t align, size_t n)
{
	void *p = alloc_memalign_fast(align, n);
	return likely(p != NULL) ? p : alloc_memalign(align, n);
}

/* C++ sized delete: free's fast path, with the size checked against the block's, which is in the
 * descriptor line free reads anyway (three instructions more than free). C++14 code deletes through
 * the sized operators, so this is every delete of a small object. A size larger than the block,
 * large blocks, NULL and pointers that start no block are alloc_delete_sized's. */
static ALWAYS_INLINE void alloc_delete_sized_inline(void *p, size_t n)
{
	if (likely(range_has(p))) {
		page_t *pg = page_of(p);
		/* (on a page that is no small run's head, block_size is another field: either way of
		 * the compare, heap_free_block1 then turns the pointer away) */
		if (likely(n <= pg->block_size) && likely(heap_free_block1(pg, p))) return;
	}
	alloc_delete_sized(p, n);
}

#endif
