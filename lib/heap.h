/* heap.h - the thread heaps' interface: the heap structure, the slow paths (heap.c), and the
 * small-block fast paths, inline for alloc.c: pop from the page's free list, push to its local
 * list, with the live bitmap checked on every malloc and every owner's free (other threads'
 * frees check it when the block is tagged free). */
#ifndef CONTIG_HEAP_H
#define CONTIG_HEAP_H
#include "common.h"
#include "classes.h"
#include "fmt.h"

/* ---- thread heaps ---- */
#define HEAP_SPARES 4                 /* empty one-page runs a heap keeps instead of giving back */
#define DIRECT_MAX 1024               /* sizes up to this find their page in heap_direct[] */
#define DIRECT_CLASSES 20             /* the classes up to DIRECT_MAX: 16 .. 1024 bytes */
typedef struct heap {
	/* owner only: the fast paths */
	page_hot_t *fast[NCLASS];       /* what the malloc fast path pops from: pages[]' page_hot_t, always
	                                   page_empty's (free list empty) when every call must take the
	                                   slow path */
	uint64_t n_free;                /* frees of this heap's blocks (other threads' once collected);
	                                   mallocs are not counted: stats.c adds the live blocks */
	uint64_t n_realloc;             /* realloc calls on this thread */
	uint64_t n_rmade, n_rfreed;     /* blocks those made (moved, or from NULL) and freed (moved, or
	                                   to size 0): not malloc or free calls of the program's */
	uint64_t n_lc_reused;           /* large blocks malloc took from this heap's cache */
	page_t *pages[NCLASS];          /* first page of each class list; &page_empty when none */
	uint32_t last[NCLASS];          /* last page of each class list (index + 1; 0 when none) */
	page_t *spare[HEAP_SPARES];     /* empty one-page runs kept for the next class that needs one */
	int nspare;
	uint32_t nruns;                 /* small runs this heap owns, spares included */
	uint64_t active[(NCLASS + 63) / 64]; /* classes whose slow path ran since the last sweep */
	uint64_t sweep_at;              /* when the slow path sweeps the idle classes next (os_now_ms;
	                                   1: wanted, not timed yet; 0: not wanted) */
	uint32_t sweep_ms;              /* the wait after a sweep: doubles while sweeps give nothing */
	uint32_t sweep_tick;            /* slow paths, for looking at the clock every SWEEP_EVERY */
	/* touched by other threads: kept off the owner's cache lines */
	_Alignas(64) _Atomic(page_t *) delayed; /* full pages that got a remote free */
	_Atomic(int) abandoned;         /* 1 while no thread owns it */
	_Atomic(int) drain_again;       /* a free into it found its lock taken: the holder collects
	                                   the whole heap once more after it unlocks */
	uint64_t kept_ms;               /* abandoned keeping its empty first runs for the next thread:
	                                   when (os_now_ms, never 0); 0 otherwise. Under heaps_lock */
	bool forked;                    /* abandoned by fork (heap_fork_child): its thread, gone in
	                                   the child, may have been between two stores of a collect */
	/* freed large blocks kept for this thread's next malloc of their size (large_cache.c) */
#define LCACHE_N 2
#define LCACHE_PAGES 32                 /* blocks of up to 2 MiB */
	_Atomic(page_t *) lcache[LCACHE_N];
	_Atomic(uint64_t) lcache_ms[LCACHE_N];  /* when each was freed (os_now_ms), for the purger */
	uint64_t lcache_seq[LCACHE_N];  /* which was freed first (lcache_puts then), for the owner */
	uint64_t lcache_puts;
	uint32_t lcache_req[LCACHE_N];  /* the last large mallocs' pages, and the most pages a block */
	uint32_t lcache_most[LCACHE_N]; /* may have for each: a free is cached when one would take it */
	uint32_t lcache_reqs;
	_Atomic(int) lcache_due;        /* the purger's decay is asked to look at them */
	pthread_mutex_t lock;           /* held by whoever acts for an abandoned heap */
	struct heap *next_all;          /* every heap ever made (never freed) */
	struct heap *next_abandoned;    /* the abandoned list */
} heap_t;

HIDDEN void *heap_alloc_small(size_t n);
HIDDEN void *heap_alloc_class(unsigned cls);
HIDDEN void heap_free_small(page_t *pg, void *p, const char *func);
HIDDEN void heap_fork_prepare(void);
HIDDEN void heap_fork_parent(void);
HIDDEN void heap_fork_child(void);
HIDDEN void heap_collect_all(void);
HIDDEN bool heap_limit_try(void);                        /* before a request the limit may refuse */
HIDDEN bool heap_limit_again(bool tried, bool served);  /* after it: true to try once more */
typedef struct heap_counts {
	uint64_t frees, reallocs;       /* small-block frees, realloc calls */
	uint64_t rmade, rfreed;         /* blocks reallocs made and freed */
	uint64_t cache_reused;          /* large blocks malloc took from the thread caches */
	size_t cached_blocks, cached_bytes;     /* freed large blocks the caches hold now */
} heap_counts_t;
HIDDEN void heap_count(heap_counts_t *c);                 /* over every heap, in one look */
HIDDEN void heap_init_key(void);
HIDDEN bool heap_tables_ok(void);                           /* the fast paths' tables match the classes */
HIDDEN void heap_set_asked(page_t *pg, const void *p, size_t n);
HIDDEN size_t heap_asked(const page_t *pg, const void *p);
/* thread caches of freed large blocks (large_cache.c) */
HIDDEN bool large_cache_put(page_t *pg, const void *p, const char *func);
HIDDEN page_t *large_cache_take(size_t n, size_t npages);
HIDDEN heap_t *heap_of_thread(void);                        /* made when it has none yet */
HIDDEN bool large_cache_flush(heap_t *h);                  /* all its blocks back to the runs */
HIDDEN uint64_t large_cache_decay(heap_t *h, uint64_t now);  /* the purger's: pages given back */
HIDDEN void large_cache_count(heap_t *h, size_t *blocks, size_t *bytes);
extern HIDDEN __thread heap_t *heap_tls __attribute__((tls_model("initial-exec")));
/* The thread's own heap's fast[] by (n + 15) / 16, for sizes up to DIRECT_MAX: in the thread's
 * static TLS, not in the heap, so that malloc reaches the page without loading heap_tls first
 * (one load off the chain, one instruction off each malloc). Written by set_first while the heap
 * is the thread's, filled when the thread takes a heap and reset when it leaves it (a heap that
 * changes hands keeps fast[], which says the same). */
extern HIDDEN __thread page_hot_t *heap_direct[DIRECT_MAX / 16 + 1] __attribute__((tls_model("initial-exec")));
extern HIDDEN heap_t heap_none;
extern HIDDEN page_t page_empty;

static inline size_t run_bytes(const page_t *pg) { return (size_t)class_pages[pg->cls] << PAGE_SHIFT; }

/* Set (malloc) or clear (free) the live bit of block bit in a run's live bitmap, saying whether
 * it was set before. The word is written back either way (unchanged when the bit already was as
 * asked, and the caller aborts then): on x86-64 one load, one bit instruction and one store, all
 * through the same addressing mode. Only the owner writes the bitmap; others' reads (a remote
 * free's live_test, the leak scan) are relaxed loads of whole words. */
static inline bool live_set_old(uint64_t *live, uint64_t bit)
{
#if defined(__x86_64__)
	bool old;
	uint64_t v;
	__asm__ __volatile__("movq %[w], %[v]\n\tbtsq %[b], %[v]\n\tmovq %[v], %[w]"
	                     : [w] "+m"(live[bit >> 6]), [v] "=&r"(v), "=@ccc"(old)
	                     : [b] "r"(bit));
	return old;
#else
	uint64_t m = 1ull << (bit & 63), v = __atomic_load_n(&live[bit >> 6], __ATOMIC_RELAXED);
	__atomic_store_n(&live[bit >> 6], v | m, __ATOMIC_RELAXED);
	return (v & m) != 0;
#endif
}

static inline bool live_clear_old(uint64_t *live, uint64_t bit)
{
#if defined(__x86_64__)
	bool old;
	uint64_t v;
	__asm__ __volatile__("movq %[w], %[v]\n\tbtrq %[b], %[v]\n\tmovq %[v], %[w]"
	                     : [w] "+m"(live[bit >> 6]), [v] "=&r"(v), "=@ccc"(old)
	                     : [b] "r"(bit));
	return old;
#else
	uint64_t m = 1ull << (bit & 63), v = __atomic_load_n(&live[bit >> 6], __ATOMIC_RELAXED);
	__atomic_store_n(&live[bit >> 6], v & ~m, __ATOMIC_RELAXED);
	return (v & m) != 0;
#endif
}

/* Whether the block whose live bit is bit (its index, below capacity) is live. */
static inline bool live_test(const page_t *pg, uint64_t bit)
{
	return (__atomic_load_n(&page_live(pg)[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63)) & 1;
}

/* Whether another thread freed the block and the owner has not taken it back yet (its live bit
 * is still set then). */
static inline bool freed_test(const page_t *pg, uint64_t bit)
{
	return (atomic_load_explicit(&page_freed(pg)[bit >> 6], memory_order_acquire) >> (bit & 63)) & 1;
}

/* Whether the block is live and no other thread has freed it: for the paths that look at a
 * block (realloc, malloc_usable_size, free_sized). The freed bitmap, in a line other threads
 * write, is read only for a run they have freed into: PAGE_REMOTE is set before the first freed
 * bit goes in and stays until the run is given back. */
static inline bool live_unfreed(const page_t *pg, uint64_t bit)
{
	if (!live_test(pg, bit)) return false;
	return !(__atomic_load_n(&pg->owner, __ATOMIC_RELAXED) & PAGE_REMOTE) || !freed_test(pg, bit);
}

/* fatal_corrupt("malloc", ...) for the link i of hot's run, reached by a jump: not being noreturn
 * keeps the stack frame it needs off the fast paths. */
HIDDEN void *heap_corrupt(const page_hot_t *hot, uint64_t i) __attribute__((returns_nonnull));

/* Hand out block i, the head of a run's free list, i below the run's capacity: the block is
 * then aligned to its class and inside the run's carved blocks, and what a use-after-free or
 * overflow write into a free block's link can still have made of it is a live block, which its
 * live bit says. i is checked before its block's own link is read, so a bad link is never
 * followed.
 * Its second word is cleared (the line is in cache: its first word was just read): a tag another
 * thread left there by a free that raced the owner's own free of it cannot survive it being
 * handed out again, and the collect of that free, which checks the tag, catches the double free. */
static inline void *hot_take_at(page_hot_t *hot, uint64_t i)
{
	if (unlikely(live_set_old(hot_live(hot), i)))
		return heap_corrupt(hot, i);
	block_t *b = hot_block(hot, i);
	hot->free = b->next;
	b->tag = 0;
	hot->used++;
	return b;
}

/* Pop the head of hot's free list, or NULL when it is empty: the malloc fast path's pop. Links
 * are indexes in the run, and the end of the list (FREE_END) is one no capacity reaches, so the
 * one test that turns away a corrupted link (one past the carved blocks, or no small number at
 * all: an address, a pointer's worth of the program's data) turns away the empty list too: both
 * go to the slow path, which pops a head that is not FREE_END with page_pop and so aborts on the
 * corrupted one. */
static inline void *hot_pop(page_hot_t *hot)
{
	uint64_t i = hot->free;
	if (likely(i < hot->capacity))
		return hot_take_at(hot, i);
	return NULL;
}

/* Pop the head of pg's free list, which is not empty, in any small run; after checking it: a
 * corrupted link must never make malloc return a block that is misaligned, outside the run's
 * carved blocks, or live. */
static inline void *page_pop(page_t *pg)
{
	page_hot_t *hot = pg->hot;
	uint64_t i = hot->free;
	if (unlikely(i >= hot->capacity))
		return heap_corrupt(hot, i);
	return hot_take_at(hot, i);
}

/* One-page runs (classes up to 16 KiB). */
static inline void *heap_malloc_fast(size_t n)
{
	page_hot_t *hot;
	if (likely(n <= DIRECT_MAX)) hot = heap_direct[(n + 15) >> 4];
	else if (n <= ONEPAGE_MAX) hot = heap_tls->fast[size_class(n)];
	else return NULL;
	return hot_pop(hot);
}

/* The head page of a small run: its blocks start at pg->start, its colour past the page's start. */
static inline bool is_small_head(const page_t *pg) { return pg->kind == PK_SMALL; }

HIDDEN void heap_free_local_slow(page_t *pg);
HIDDEN void heap_invalid(const char *func, const void *p);   /* fatal_pointer, by a jump */
HIDDEN void heap_free_remote(page_t *pg, void *b, uint64_t bit, const char *func);

/* hot->used--, saying whether the page is now empty and not first in its list (USED_HEAD), or
 * off its list (USED_UNLISTED). */
static inline bool used_drop(page_hot_t *hot)
{
#if defined(__x86_64__)
	bool le;
	__asm__("subl $1, %0" : "+m"(hot->used), "=@ccle"(le));
	return le;
#else
	return (int32_t)--hot->used <= 0;
#endif
}

/* The owner's free of p, a block of pg whose live bit is bit: straight back on the list malloc
 * pops from, so the next malloc of the class reuses it, still in cache. */
static inline void heap_free_owned(heap_t *h, page_t *pg, void *p, uint64_t bit, const char *func)
{
	page_hot_t *hot = pg->hot;
	if (unlikely(!live_clear_old(hot_live(hot), bit))) {
		heap_invalid(func, p);
		return;
	}
	block_t *b = p;
	b->next = hot->free;
	b->tag = FREE_TAG;
	hot->free = bit;
	h->n_free++;
	/* now empty, or off the list (USED_UNLISTED); an empty page that malloc serves from
	 * stays as it is (USED_HEAD: a malloc/free loop empties it on every free) */
	if (unlikely(used_drop(hot)))
		heap_free_local_slow(pg);
}

/* The free itself, once p is known to start a block of pg whose live bit is bit. The owner frees
 * it at once, after a look at its tag on a run marked PAGE_REMOTE; another thread looks at its
 * tag (and the live bit, if it is tagged free) and hands the block to the owner
 * (heap_free_remote). */
static ALWAYS_INLINE void heap_free_checked(page_t *pg, void *p, uint64_t bit, const char *func)
{
	heap_t *h = heap_tls;
	uintptr_t ow = __atomic_load_n(&pg->owner, __ATOMIC_RELAXED);
	if (likely(ow == (uintptr_t)h)) {
		heap_free_owned(h, pg, p, bit, func);
		return;
	}
	if (ow == ((uintptr_t)h | PAGE_REMOTE)) {
		/* the owner of a page other threads freed into: p may be one of their frees, not
		 * taken back yet (its live bit still set); a second free of it would put it on the
		 * list twice, and two mallocs would get it. Their tag in p's second word (in the
		 * line this free writes anyway) says so before the freed bitmap, which they write
		 * on every free, is read at all. */
		if (unlikely(((block_t *)p)->tag == remote_tag(p) && freed_test(pg, bit))) {
			heap_invalid(func, p);
			return;
		}
		heap_free_owned(h, pg, p, bit, func);
		return;
	}
	/* Another thread's block. Its live bit is not read unless the block's own second word,
	 * in the line this free writes anyway, says it may be free already (FREE_TAG): a block on
	 * its owner's list always carries that tag, so a double free or a free of a block never
	 * handed out is caught here, at the call. Only a free block whose tag a use-after-free write
	 * wiped goes on: its freed bit then finds no live bit when the owner collects it, which
	 * aborts there (collect_remote), and malloc never hands it out twice. */
	if (unlikely(((block_t *)p)->tag == FREE_TAG) && !live_test(pg, bit)) {
		heap_invalid(func, p);
		return;
	}
	heap_free_remote(pg, p, bit, func);
}

/* Free of a block in a PK_SMALL run (pg is the run's head; p in any of its pages). An offset that
 * is no carved block start (inside a block, past the carved ones) has no index below capacity. */
static inline void heap_free_block(page_t *pg, void *p, const char *func)
{
	uint64_t bit = block_index(pg, p);
	if (unlikely(bit >= pg->capacity))
		fatal_pointer(func, p);
	heap_free_checked(pg, p, bit, func);
}

/* free(p) for p in the page pg describes, when p starts a carved block of a small run that
 * starts at that page (its offset from the run's first block, start, is a multiple of the block
 * size): false, and nothing done, otherwise. A pointer below start (in the run's colour) has an
 * offset that wraps round, and so an index no capacity reaches.
 * Only a small run's head has a non-zero capacity, so this one test also turns away every
 * other kind of page. */
static ALWAYS_INLINE bool heap_free_block1(page_t *pg, void *p)
{
	uint64_t bit = block_index(pg, p);
	if (unlikely(bit >= pg->capacity)) return false;
	heap_free_checked(pg, p, bit, "free");
	return true;
}

#endif
