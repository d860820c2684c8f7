/* alloc.c - the malloc family on top of the core: small blocks through the thread heaps, large
 * blocks as page runs, alignment, realloc in place, pointers the library does not own. */
#include "alloc.h"
#include "heap.h"
#include "region.h"
#include "range.h"
#include "init.h"
#include "fmt.h"
#include "os.h"
#include "maps.h"
#include "leak_records.h"
#include <errno.h>
#include <string.h>

static inline bool is_pow2(size_t x) { return x && !(x & (x - 1)); }

/* ---- CONTIG_FALLBACK=system: blocks outside the range, each its own mapping, remembered in an
 * open-addressed table so that free, realloc and malloc_usable_size know them. A freed block's
 * slot keeps its address, marked freed (FB_FREED), so that a second free of it is caught, not
 * taken for a foreign pointer and ignored (or, once the kernel has handed the address out again
 * for another fallback block, made to unmap that one). The table starts at 4096 slots and
 * doubles (rehashed, freed slots dropped) before it is half used; the old table is metadata,
 * never freed, so that is at most as much again. ---- */
typedef struct fb_slot { uintptr_t addr; size_t len; } fb_slot_t;
static pthread_mutex_t fb_lock = PTHREAD_MUTEX_INITIALIZER;
static fb_slot_t *fb_tab;
static size_t fb_cap;                   /* slots, a power of two */
static size_t fb_used;                  /* live entries and tombstones */
static _Atomic(size_t) fb_live;
static _Atomic(uint64_t) fb_made, fb_freed;   /* fallback blocks handed out and freed (calls_*) */
#define FB_TOMB ((uintptr_t)1)
#define FB_FREED ((uintptr_t)2)         /* | a freed block's address (fallback blocks are page-aligned) */
#define FB_FIRST 4096u

static size_t fb_hash(uintptr_t a, size_t cap) { return (size_t)((a >> 12) * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1); }

static void fb_put(fb_slot_t *tab, size_t cap, uintptr_t a, size_t len)
{
	size_t i = fb_hash(a, cap);
	while (tab[i].addr > FB_TOMB && tab[i].addr != (a | FB_FREED)) i = (i + 1) & (cap - 1);
	tab[i].addr = a;
	tab[i].len = len;
}

/* fork: the fallback table's lock is held across it (a thread caught inside a fallback call
 * would leave the child's copy locked for good), then the heaps' and the range's (heap.c). */
void alloc_fork_prepare(void)
{
	pthread_mutex_lock(&fb_lock);
	heap_fork_prepare();
}

void alloc_fork_parent(void)
{
	heap_fork_parent();
	pthread_mutex_unlock(&fb_lock);
}

void alloc_fork_child(void)
{
	heap_fork_child();
	pthread_mutex_init(&fb_lock, NULL);
	leak_records_fork_child();
}

/* Room for one more entry (under fb_lock): false when no memory for a bigger table. */
static bool fb_room(void)
{
	if (fb_tab && (fb_used + 1) * 2 <= fb_cap) return true;
	size_t live = atomic_load(&fb_live);
	size_t cap = fb_cap ? fb_cap : FB_FIRST;
	while ((live + 1) * 4 > cap) cap *= 2;       /* a quarter full at most after a rehash */
	fb_slot_t *t = meta_alloc(sizeof(fb_slot_t) * cap);
	if (!t) return fb_tab && fb_used + 1 < fb_cap;
	for (size_t i = 0; i < fb_cap; i++)
		if (fb_tab[i].addr > FB_TOMB && !(fb_tab[i].addr & FB_FREED)) fb_put(t, cap, fb_tab[i].addr, fb_tab[i].len);
	fb_tab = t;
	fb_cap = cap;
	fb_used = live;
	return true;
}

/* A fresh mapping outside the range of len bytes aligned to align (a power of two): one
 * align - 4 KiB longer, trimmed at both ends. */
static void *fallback_map(size_t len, size_t align)
{
	if (align <= OS_PAGE) return os_map_meta(len, G.base, G.base + G.size);
	size_t span = len + align - OS_PAGE;
	if (span < len) return NULL;
	uintptr_t m = (uintptr_t)os_map_meta(span, G.base, G.base + G.size);
	if (!m) return NULL;
	uintptr_t a = align_up(m, align);
	if (a > m) os_munmap((void *)m, a - m);
	if (m + span > a + len) os_munmap((void *)(a + len), m + span - (a + len));
	return (void *)a;
}

static void *fallback_alloc(size_t n, size_t align, int zero)
{
	(void)zero;                         /* fresh mappings read as zero */
	size_t len = align_up(n ? n : 1, OS_PAGE);
	if (len < n) return NULL;
	pthread_mutex_lock(&fb_lock);
	void *p = NULL;
	if (fb_room()) {
		p = fallback_map(len, align);
		if (p) {
			fb_put(fb_tab, fb_cap, (uintptr_t)p, len);
			fb_used++;
			atomic_fetch_add(&fb_live, 1);
			atomic_fetch_add_explicit(&fb_made, 1, memory_order_relaxed);
		}
	}
	pthread_mutex_unlock(&fb_lock);
	if (p) {
		region_count_fallback(len);
		if (G.cfg.verbose) log_line("fallback: the range cannot serve a request; served outside it (CONTIG_FALLBACK=system)");
	}
	return p;
}

/* Length of fallback block p (removing it when take), or 0 when p is not one. */
static size_t fallback_find(const void *p, bool take)
{
	size_t len = 0;
	if (!atomic_load_explicit(&fb_live, memory_order_relaxed)) return 0;
	pthread_mutex_lock(&fb_lock);
	for (size_t i = fb_hash((uintptr_t)p, fb_cap), k = 0; fb_tab && k < fb_cap && fb_tab[i].addr;
	     i = (i + 1) & (fb_cap - 1), k++) {
		if (fb_tab[i].addr == (uintptr_t)p) {
			len = fb_tab[i].len;
			if (take) {
				fb_tab[i].addr = (uintptr_t)p | FB_FREED;
				atomic_fetch_sub(&fb_live, 1);
			}
			break;
		}
	}
	pthread_mutex_unlock(&fb_lock);
	return len;
}

void alloc_fallback_calls(uint64_t *made, uint64_t *freed)
{
	*made = atomic_load_explicit(&fb_made, memory_order_relaxed);
	*freed = atomic_load_explicit(&fb_freed, memory_order_relaxed);
}

/* Whether p is a fallback block freed already (not handed out again since). */
static bool fallback_freed(const void *p)
{
	bool freed = false;
	if (!fb_cap || ((uintptr_t)p & (OS_PAGE - 1))) return false;
	pthread_mutex_lock(&fb_lock);
	for (size_t i = fb_hash((uintptr_t)p, fb_cap), k = 0; fb_tab && k < fb_cap && fb_tab[i].addr;
	     i = (i + 1) & (fb_cap - 1), k++) {
		if (fb_tab[i].addr == (uintptr_t)p) break;          /* live again */
		if (fb_tab[i].addr == ((uintptr_t)p | FB_FREED)) { freed = true; break; }
	}
	pthread_mutex_unlock(&fb_lock);
	return freed;
}

/* e: errno before the range was tried (a failed try set it; a served block keeps it) */
static void *fallback_or_enomem(size_t n, size_t align, int zero, int e)
{
	if (G.cfg.fallback_system && !limit_refused) {
		void *p = fallback_alloc(n, align, zero);
		if (p) { errno = e; return p; }
	}
	errno = ENOMEM;
	return NULL;
}

/* ---- large blocks ---- */
/* A block of its own pages; align is what the caller needs (runs are 64 KiB-aligned anyway).
 * Fallback blocks are mappings of their own, trimmed to the alignment asked for. */
static NOINLINE void *large_alloc(size_t n, size_t align, int zero)
{
	int e = errno;
	if (n > ((size_t)1 << 62) || n + align < n) { errno = ENOMEM; return NULL; }
	/* more than RAM and swap together: glibc's malloc fails there (the kernel refuses its
	 * mapping under heuristic overcommit), and the range's pages would not */
	if (maps_beyond_memory(n)) { errno = ENOMEM; return NULL; }
	if (n > G.size) return fallback_or_enomem(n, align, zero, e);
	size_t np = (align_up(n ? n : 1, PAGE_SIZE)) >> PAGE_SHIFT;    /* size 0 still gets a page */
	/* while leaks are checked every block starts zeroed: no stale pointer in what the caller
	 * has not written yet keeps a lost block reachable (small blocks: leak_note_new) */
	int flags = zero || G.slow_only ? RUN_ZERO : 0;
	page_t *h;
	/* a block this thread freed, of about that size (large_cache.c); its pages are not zero */
	if (!flags && np <= LCACHE_PAGES && align <= PAGE_SIZE && (h = large_cache_take(n, np))) {
		void *p = (void *)page_addr(page_idx(h));
		__atomic_store_n(&h->asked, n, __ATOMIC_RELAXED);
		return p;
	}
	bool tried = heap_limit_try();
	h = region_alloc_aligned(np, align, PK_LARGE, flags);
	if (heap_limit_again(tried, h != NULL)) h = region_alloc_aligned(np, align, PK_LARGE, flags);
	if (!h) return fallback_or_enomem(n, align, zero, e);
	/* The block's address in a register before its size is set: a leak check that stops this
	 * thread in between must find a pointer to a block whose size says it is made (with only
	 * the descriptor in hand there, CI once reported a block of safety/leaks.sh's largeswap as
	 * leaked). The empty asm keeps the compiler from deriving p from h after the store. */
	void *p = (void *)page_addr(page_idx(h));
	__asm__ volatile("" : "+r"(p) : : "memory");
	h->asked = n;
	if (G.slow_only) leak_note_alloc(p, n);
	return p;
}

/* ---- pointers outside the range ---- */
static void free_outside(void *p, const char *func)
{
	if (!p) return;
	size_t fl = fallback_find(p, true);
	if (fl) {
		os_munmap(p, fl);
		atomic_fetch_add_explicit(&fb_freed, 1, memory_order_relaxed);
		return;
	}
	if (fallback_freed(p)) fatal_pointer(func, p);
	if (G.cfg.verbose) {
		char buf[160];
		fmtbuf_t b;
		fmt_init(&b, buf, sizeof buf);
		fmt_str(&b, func);
		fmt_str(&b, "(): ignoring ");
		fmt_hex(&b, (uintptr_t)p);
		fmt_str(&b, range_has(p) ? ", inside a foreign mapping" : ", not from the range");
		log_line(buf);
	}
}

/* ---- malloc ---- */
/* While leaks are checked, every allocation entry returns through leak_scrubbed (leak_records.h):
 * a stale copy of the block's address in the dead stack its calls used would keep it reachable. */
static inline void *leak_done(void *p) { return unlikely(G.slow_only) ? leak_scrubbed(p) : p; }

NOINLINE void *alloc_malloc_slow(size_t n)
{
	contig_ensure_init();
	void *p;
	if (n <= SMALL_MAX) {
		int e = errno;
		p = heap_alloc_small(n);
		if (!p) p = fallback_or_enomem(n, ALIGN_MIN, 0, e);
	} else {
		p = large_alloc(n, ALIGN_MIN, 0);
	}
	return leak_done(p);
}

void *alloc_malloc(size_t n) { return alloc_malloc_inline(n); }

/* malloc for C++ new: on_fail(n) decides what a failure becomes (the new_handler loop, bad_alloc). */
NOINLINE void *alloc_new_slow(size_t n, void *(*on_fail)(size_t))
{
	void *p = alloc_malloc_slow(n);
	return p ? p : on_fail(n);
}


void *alloc_calloc(size_t n, size_t m)
{
	size_t total;
	if (unlikely(__builtin_mul_overflow(n, m, &total))) { errno = ENOMEM; return NULL; }
	if (total <= SMALL_MAX) {
		void *p = alloc_malloc(total);
		if (p && range_has(p)) memset(p, 0, total);
		return p;
	}
	contig_ensure_init();
	return leak_done(large_alloc(total, ALIGN_MIN, 1));
}

/* ---- free ---- */
/* Whether p, on page pg of the range, lies in memory that is not the heap's: a foreign mapping
 * (one not found yet, on a page never made usable, is looked for in /proc/self/maps) or a
 * caller's MAP_FIXED pages. free ignores such a pointer, realloc fails. */
static bool not_heap(const page_t *pg, const void *p)
{
	if (pg->kind == PK_FOREIGN || pg->kind == PK_MMAP_FIXED) return true;
	return pg->kind == PK_UNUSED && range_foreign_at((uintptr_t)p);
}

static NOINLINE void free_slow(page_t *pg, void *p, const char *func)
{
	switch (pg->kind) {
	case PK_CONT: {
		page_t *h = page_run_head(pg);
		if (h->kind == PK_SMALL) { heap_free_block(h, p, func); return; }
		break;
	}
	case PK_LARGE:
		if ((uintptr_t)p != page_addr(page_idx(pg))) break;
		/* freed already, into a thread's cache */
		if (__atomic_load_n(&pg->asked, __ATOMIC_RELAXED) == ASKED_CACHED) break;
		if (large_cache_put(pg, p, func)) return;
		/* Past here a leak check that stops this thread finds it holding only pg: asked 0, the
		 * mark of a block going away (region_free_since), goes in while p is still held. Set
		 * there alone, it came a few instructions after p was dropped: a thread stopped in
		 * between made the block a false leak (safety/leaks.sh's largeswap, 3 runs in 3,200
		 * under load). */
		__atomic_store_n(&pg->asked, 0, __ATOMIC_RELAXED);
		__asm__ volatile("" : : "r"(p) : "memory");
		region_free(pg);
		return;
	default:
		if (not_heap(pg, p)) { free_outside(p, func); return; }
		break;
	}
	fatal_pointer(func, p);
}

void alloc_free_outside(void *p) { free_outside(p, "free"); }
NOINLINE void alloc_free_slow(page_t *pg, void *p) { free_slow(pg, p, "free"); }
void alloc_free(void *p) { alloc_free_inline(p); }

/* Usable size of a live block, aborting (as func) when p is not one. */
static size_t live_size(void *p, page_t **headp, const char *func)
{
	page_t *h = page_run_head(page_of(p));
	*headp = h;
	if (h->kind == PK_SMALL) {
		uint64_t bit = block_index(h, p);
		if (bit >= h->capacity || !live_unfreed(h, bit)) fatal_pointer(func, p);
		return h->block_size;
	}
	if (h->kind == PK_LARGE && (uintptr_t)p == page_addr(page_idx(h)) && h->asked != ASKED_CACHED)
		return h->usable;
	if (not_heap(h, p)) return 0;
	fatal_pointer(func, p);
}

/* free_sized(p, n): the size must fit the block. func names the call in an invalid-pointer
 * message, sfunc in a wrong-size one. */
static void free_sized_as(void *p, size_t n, const char *func, const char *sfunc)
{
	if (p && range_has(p)) {
		page_t *h;
		size_t u = live_size(p, &h, func);
		if (u && n > u) fatal_msg(sfunc, "size larger than the block");
	}
	alloc_free(p);
}

void alloc_free_sized(void *p, size_t n) { free_sized_as(p, n, "free_sized", "free_sized"); }

/* C++ sized delete: the size must fit the block. In a run's head page, the common case, it is
 * one compare with the block size before the ordinary free; the rest go the free_sized way
 * (as free). */
void alloc_delete_sized(void *p, size_t n)
{
	if (likely(range_has(p))) {
		page_t *pg = page_of(p);
		if (likely(is_small_head(pg))) {
			if (unlikely(n > pg->block_size))
				fatal_msg("operator delete", "size larger than the block");
			if (!heap_free_block1(pg, p)) heap_invalid("free", p);
			return;
		}
	}
	/* (an invalid pointer says free(), as for small blocks: what log parsers look for) */
	free_sized_as(p, n, "free", "operator delete");
}

void alloc_free_aligned_sized(void *p, size_t align, size_t n)
{
	if (p && range_has(p)) {
		page_t *h;
		size_t u = live_size(p, &h, "free_aligned_sized");
		if (u && (n > u || !is_pow2(align) || ((uintptr_t)p & (align - 1))))
			fatal_msg("free_aligned_sized", "size or alignment does not match the block");
	}
	alloc_free(p);
}

size_t alloc_usable_size(const void *p)
{
	if (!p) return 0;
	if (!range_has(p)) return fallback_find(p, false);
	page_t *h = page_run_head(page_of(p));
	if (h->kind == PK_SMALL) {
		/* a block start (aligned, carved) that is live: a freed block has no usable bytes */
		uint64_t bit = block_index(h, p);
		if (bit >= h->capacity || !live_unfreed(h, bit)) return 0;
		/* while leaks are checked, the scan reads from now on all the bytes the program was
		 * told it may use */
		if (unlikely(G.slow_only))
			leak_note_usable((void *)p, heap_asked(h, p), h->block_size);
		return h->block_size;
	}
	if (h->kind == PK_LARGE && (uintptr_t)p == page_addr(page_idx(h)) && h->asked != ASKED_CACHED) {
		if (unlikely(G.slow_only)) leak_note_usable((void *)p, h->asked, h->usable);
		return h->usable;
	}
	return 0;
}

/* ---- realloc ---- */
/* The statistics count calls of the program's: a realloc that makes or frees a block counts as
 * a realloc, not as the malloc and free it does inside. */
static void realloc_counted(bool made, bool freed)
{
	heap_t *h = heap_tls;
	if (h == &heap_none) return;
	h->n_realloc++;
	h->n_rmade += made;
	h->n_rfreed += freed;
}

static NOINLINE void *realloc_body(void *p, size_t n);
static NOINLINE void *realloc_general(void *p, size_t n) { return leak_done(realloc_body(p, n)); }

static NOINLINE void *realloc_body(void *p, size_t n)
{
	if (!p) {
		void *q = alloc_malloc(n);
		realloc_counted(q != NULL, false);
		return q;
	}
	if (n == 0) {                          /* glibc: frees and returns NULL */
		alloc_free(p);
		realloc_counted(false, true);
		return NULL;
	}
	if (!range_has(p)) {
		size_t fl = fallback_find(p, false);
		if (!fl && fallback_freed(p)) fatal_pointer("realloc", p);
		if (!fl) {                         /* we cannot tell its size */
			errno = ENOMEM;
			return NULL;
		}
		void *q = alloc_malloc(n);
		if (!q) { realloc_counted(false, false); return NULL; }
		memcpy(q, p, fl < n ? fl : n);
		alloc_free(p);
		realloc_counted(true, true);
		return q;
	}
	page_t *h;
	size_t old = live_size(p, &h, "realloc");
	realloc_counted(false, false);
	if (old == 0) { errno = ENOMEM; return NULL; }
	if (n > G.size) goto move;             /* only a fallback block can be that big */
	if (h->kind == PK_SMALL) {
		if (n <= old && n > old / 2) {
			if (G.slow_only) {
				size_t was = heap_asked(h, p);
				heap_set_asked(h, p, n);
				leak_note_realloc(p, was, n);
			}
			return p;
		}
	} else if (n > SMALL_MAX || n > old / 2) {
		size_t np = align_up(n, PAGE_SIZE) >> PAGE_SHIFT;
		/* while leaks are checked a large block grows only by moving: the new run's pages
		 * are zeroed as calloc's are (the pages it would grow into may hold stale pointers) */
		if (np > h->npages && maps_beyond_memory(n)) {
			errno = ENOMEM;             /* more than RAM and swap (large_alloc): the block stays */
			return NULL;
		}
		if (np == h->npages || ((!G.slow_only || np < h->npages) && region_resize(h, np, 0) == 0)) {
			size_t was = h->asked;
			h->usable = np << PAGE_SHIFT;
			h->asked = n;
			if (G.slow_only) leak_note_realloc(p, was, n);
			return p;
		}
	}
move:;
	void *q = alloc_malloc(n);
	if (!q) return NULL;
	memcpy(q, p, old < n ? old : n);
	alloc_free(p);
	if (heap_tls != &heap_none) { heap_tls->n_rmade++; heap_tls->n_rfreed++; }
	return q;
}

/* realloc's common case after realloc(NULL, n) (alloc_realloc_inline), with no more work than
 * the malloc and free it stands for: a block that starts a small run's head page, kept when the
 * size still fits it (and is more than half of it) or moved to a block the malloc fast path
 * hands out. Everything else, and every call while leaks are checked (G.slow_only: the fast
 * malloc then serves nothing), is realloc_general's. */
void *alloc_realloc(void *p, size_t n)
{
	if (likely(p != NULL && n != 0 && range_has(p))) {
		page_t *pg = page_of(p);
		uint64_t bit = block_index(pg, p);
		/* only a small run's head page has a non-zero capacity */
		if (likely(bit < pg->capacity) && likely(live_unfreed(pg, bit))) {
			size_t old = pg->block_size;
			if (n <= old && n > old / 2) {
				if (unlikely(G.slow_only)) return realloc_general(p, n);
				realloc_counted(false, false);
				return p;
			}
			void *q = heap_malloc_fast(n);
			if (likely(q != NULL)) {
				memcpy(q, p, old < n ? old : n);
				heap_free_checked(pg, p, bit, "free");
				realloc_counted(true, true);
				return q;
			}
		}
	}
	return realloc_general(p, n);
}

void *alloc_reallocarray(void *p, size_t n, size_t m)
{
	size_t total;
	if (__builtin_mul_overflow(n, m, &total)) { errno = ENOMEM; return NULL; }
	return alloc_realloc(p, total);
}

/* ---- alignment ---- */
static NOINLINE void *memalign_body(size_t align, size_t n);
void *alloc_memalign(size_t align, size_t n) { return leak_done(memalign_body(align, n)); }

static NOINLINE void *memalign_body(size_t align, size_t n)
{
	if (align <= ALIGN_MIN) return alloc_malloc(n);
	/* glibc: EINVAL only past 2^63 (no power of two is); 2^63 itself cannot be served */
	if (align > ((size_t)1 << 63)) { errno = EINVAL; return NULL; }
	if (align > ((size_t)1 << 62)) { errno = ENOMEM; return NULL; }
	if (!is_pow2(align)) align = (size_t)1 << (64 - __builtin_clzl(align));
	if (n <= SMALL_MAX && align <= PAGE_SIZE) {
		/* Blocks sit at multiples of their size from their run's start, a 64 KiB boundary
		 * plus a colour that is a multiple of 64 (classes.h): a class whose size is a multiple
		 * of align gives aligned blocks, from its aligned twin (never coloured) when align is
		 * more than 64. The first such class's list is popped as malloc's fast path pops it
		 * (heap_none's and, while leaks are checked, every heap's lists are empty: the slow
		 * path then serves). */
		for (unsigned c = size_class(n > align ? n : align); c < NCLASS_MALLOC; c++) {
			if ((class_size[c] & (align - 1)) == 0) {
				if (align > 64 && class_coloured(c)) c = class_twin[c];
				void *p = hot_pop(heap_tls->fast[c]);
				if (likely(p != NULL)) return p;
				int e = errno;
				contig_ensure_init();
				p = heap_alloc_class(c);
				if (G.slow_only && p) { heap_set_asked(page_of(p), p, n); leak_note_new(p, n); }
				return p ? p : fallback_or_enomem(n, align, 0, e);
			}
		}
	}
	contig_ensure_init();
	return large_alloc(n, align, 0);
}

int alloc_posix_memalign(void **out, size_t align, size_t n)
{
	if (!is_pow2(align) || align % sizeof(void *)) return EINVAL;
	int saved = errno;
	void *p = alloc_memalign(align, n);
	if (!p) { int e = errno; errno = saved; return e ? e : ENOMEM; }
	*out = p;
	return 0;
}

void *alloc_aligned_alloc(size_t align, size_t n)
{
	if (!is_pow2(align)) { errno = EINVAL; return NULL; }
	return alloc_memalign(align, n);
}

void *alloc_valloc(size_t n) { return alloc_memalign(OS_PAGE, n); }

void *alloc_pvalloc(size_t n)
{
	size_t r = align_up(n ? n : 1, OS_PAGE);
	if (r < n) { errno = ENOMEM; return NULL; }
	return alloc_memalign(OS_PAGE, r);
}

int alloc_trim(size_t pad)
{
	(void)pad;
	contig_ensure_init();
	heap_collect_all();
	return region_purge(true) > 0;
}
