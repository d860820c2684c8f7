/* heap.h - the thread heaps' interface: the heap structure, the slow paths (heap.c), and the
 * small-block fast paths, inline for alloc.c: pop from the page's free list, push to its local
 * list, with the live bitmap checked on every free. */
#ifndef CONTIG_HEAP_H
#define CONTIG_HEAP_H
#include "common.h"
#include "classes.h"
#include "fmt.h"

/* ---- thread heaps ---- */
#define HEAP_SPARES 4                 /* empty one-page runs a heap keeps instead of giving back */
typedef struct heap {
	/* owner only: the fast paths */
	page_t *fast[NCLASS];           /* what the malloc fast path pops from: pages[] normally, always
	                                   &page_empty when every call must take the slow path */
	uint64_t n_malloc;              /* allocations this heap served */
	uint64_t n_free;                /* frees this thread made */
	uint64_t n_realloc;             /* realloc calls on this thread */
	page_t *pages[NCLASS];          /* first page of each class list; &page_empty when none */
	page_t *spare[HEAP_SPARES];     /* empty one-page runs kept for the next class that needs one */
	int nspare;
	/* touched by other threads: kept off the owner's cache lines */
	_Alignas(64) _Atomic(page_t *) delayed; /* full pages that got a remote free */
	_Atomic(int) abandoned;         /* 1 while no thread owns it */
	pthread_mutex_t lock;           /* held by whoever acts for an abandoned heap */
	struct heap *next_all;          /* every heap ever made (never freed) */
	struct heap *next_abandoned;    /* the abandoned list */
} heap_t;

HIDDEN heap_t *heap_get(void);
HIDDEN void *heap_alloc_small(size_t n);
HIDDEN void *heap_alloc_class(unsigned cls);
HIDDEN void heap_free_small(page_t *pg, void *p, const char *func);
HIDDEN void heap_fork_prepare(void);
HIDDEN void heap_fork_parent(void);
HIDDEN void heap_fork_child(void);
HIDDEN void heap_collect_all(void);
HIDDEN void heap_count_calls(uint64_t *m, uint64_t *f, uint64_t *r);
HIDDEN void heap_init_key(void);
HIDDEN void heap_flush_remote(void);
HIDDEN size_t heap_pending_blocks(void **out, size_t max);
HIDDEN void heap_set_asked(page_t *pg, const void *p, size_t n);
HIDDEN size_t heap_asked(const page_t *pg, const void *p);
extern HIDDEN __thread heap_t *heap_tls __attribute__((tls_model("initial-exec")));
extern HIDDEN heap_t heap_none;
extern HIDDEN page_t page_empty;

static inline uint64_t *live_word(const page_t *pg, uintptr_t off, uint64_t *mask)
{
	size_t bit = off >> pg->shift;
	*mask = 1ull << (bit & 63);
	return &pg->live[bit >> 6];
}

static inline uintptr_t page_start(const page_t *pg) { return pg->start; }
static inline size_t run_bytes(const page_t *pg) { return (size_t)class_pages[pg->cls] << PAGE_SHIFT; }

/* Pop b, the head of pg's free list; validates the link it decodes, so a use-after-free write
 * cannot make malloc hand out memory outside the page. */
static inline void *page_pop(page_t *pg, block_t *b)
{
	block_t *next = b->next;
	uintptr_t off = (uintptr_t)b - pg->start;
	if (unlikely(next != NULL && (uintptr_t)next - pg->start >= run_bytes(pg)))
		fatal_msg("malloc", "heap corruption: a free block's link leaves its page (use after free?)");
	pg->free = next;
	pg->used++;
	uint64_t m, *w = live_word(pg, off, &m);
	__atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) | m, __ATOMIC_RELAXED);
	return b;
}

/* One-page runs (classes up to 16 KiB): the page is 64 KiB-aligned, its bitmap has one bit per
 * 16 bytes, and a valid link stays inside the block's own 64 KiB page. */
static inline void *heap_malloc_fast(size_t n)
{
	heap_t *h = heap_tls;
	if (likely(n <= ONEPAGE_MAX)) {
		page_t *pg = h->fast[size_class(n)];
		block_t *b = pg->free;
		if (likely(b != NULL)) {
			block_t *next = b->next;
			if (unlikely(((uintptr_t)next ^ (uintptr_t)b) >= PAGE_SIZE && next != NULL))
				fatal_msg("malloc", "heap corruption: a free block's link leaves its page (use after free?)");
			pg->free = next;
			pg->used++;
			h->n_malloc++;
			size_t bit = ((uintptr_t)b & (PAGE_SIZE - 1)) >> 4;
			uint64_t *w = &pg->live[bit >> 6];
			__atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) | (1ull << (bit & 63)), __ATOMIC_RELAXED);
			return b;
		}
	}
	return NULL;
}

/* kind and shift together: a one-page small run */
static inline bool is_small1(const page_t *pg)
{
	uint16_t ks;
	__builtin_memcpy(&ks, &pg->kind, 2);
	return ks == (uint16_t)(PK_SMALL | (4u << 8));
}

HIDDEN void heap_free_local_slow(page_t *pg);
HIDDEN void heap_free_remote(page_t *pg, block_t *b, const char *func);

/* The free itself, once p is known to start a block of pg whose live bit is m in *w. The owner
 * pushes the block straight back on the list malloc pops from: the next malloc of the class
 * reuses it, still in cache. Another thread checks the bit and hands the block to the owner. */
static inline void heap_free_checked(page_t *pg, void *p, uint64_t *w, uint64_t m, const char *func)
{
	heap_t *h = heap_tls;
	if (likely(pg->heap == h)) {
		uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
		if (unlikely(!(v & m)))
			fatal_pointer(func, p);
		__atomic_store_n(w, v & ~m, __ATOMIC_RELAXED);
		block_t *b = p;
		b->next = pg->free;
		pg->free = b;
		h->n_free++;
		if (unlikely((uint32_t)(--pg->used - 1) >= USED_MASK))     /* now empty, or off the list */
			heap_free_local_slow(pg);
		return;
	}
	if (unlikely(!(__atomic_load_n(w, __ATOMIC_RELAXED) & m)))
		fatal_pointer(func, p);
	heap_free_remote(pg, p, func);
}

/* Free of a block in a PK_SMALL run (pg is the run's head). */
static inline void heap_free_block(page_t *pg, void *p, const char *func)
{
	uintptr_t off = (uintptr_t)p - pg->start;
	if (unlikely((off & (ALIGN_MIN - 1)) != 0 ||
	             (pg->shift != 4 && off % pg->block_size != 0)))
		fatal_pointer(func, p);
	uint64_t m, *w = live_word(pg, off, &m);
	heap_free_checked(pg, p, w, m, func);
}

/* heap_free_block for a one-page run, with the constants folded in. */
static inline void heap_free_block1(page_t *pg, void *p)
{
	uintptr_t off = (uintptr_t)p & (PAGE_SIZE - 1);
	if (unlikely((off & (ALIGN_MIN - 1)) != 0))
		fatal_pointer("free", p);
	size_t bit = off >> 4;
	heap_free_checked(pg, p, &pg->live[bit >> 6], 1ull << (bit & 63), "free");
}

#endif
