/* heap.c - thread heaps and their pages of small blocks: refilling, remote frees (mimalloc-style
 * free-list sharding), full pages, thread exit and heap adoption, fork. */
#include "heap.h"
#include "region.h"
#include "range.h"
#include "os.h"
#include "leak_records.h"
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>

page_t page_empty;     /* what an empty class list points to: its free list is always NULL */
/* A thread's heap before it has one: every fast path through it fails, and the slow path makes
 * (or adopts) the real heap. It owns no page, so frees through it are remote frees. */
heap_t heap_none = { .direct = { [0 ... DIRECT_MAX / 16] = &page_empty },
                     .fast = { [0 ... NCLASS - 1] = &page_empty } };
__thread heap_t *heap_tls __attribute__((tls_model("initial-exec"))) = &heap_none;
/* Heap locks (heaps_lock, a heap's lock) this thread holds: nothing that allocates may run then. */

static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;
static heap_t *heaps_all;
static heap_t *heaps_abandoned;
static pthread_key_t heap_key;
static int heap_key_ok;

static inline page_t *PG(uint32_t i) { return &G.pages[i - 1]; }
static inline uint32_t ID(page_t *pg) { return (uint32_t)page_idx(pg) + 1; }

/* ---- class lists (owner only) ---- */
/* The direct[] entries of each class up to DIRECT_MAX: first index and count (1, 2, 4 or 8: four
 * classes per doubling). A new head page is written to all of them, by a jump into a run of
 * stores rather than a loop: it happens on every visit of a page in a random replacement. */
static const struct { uint8_t lo, n; } direct_span[DIRECT_CLASSES + 1] = {
	{ 0, 0 }, { 0, 2 }, { 2, 1 }, { 3, 1 }, { 4, 1 }, { 5, 1 }, { 6, 1 }, { 7, 1 }, { 8, 1 },
	{ 9, 2 }, { 11, 2 }, { 13, 2 }, { 15, 2 }, { 17, 4 }, { 21, 4 }, { 25, 4 }, { 29, 4 },
	{ 33, 8 }, { 41, 8 }, { 49, 8 }, { 57, 8 } };

static inline void set_first(heap_t *h, unsigned cls, page_t *pg)
{
	h->pages[cls] = pg;
	page_t *f = G.slow_only ? &page_empty : pg;
	h->fast[cls] = f;
	if (cls > DIRECT_CLASSES) return;
	page_t **d = &h->direct[direct_span[cls].lo];
	switch (direct_span[cls].n) {
	case 8: d[7] = f; d[6] = f; d[5] = f; d[4] = f; /* fall through */
	case 4: d[3] = f; d[2] = f; /* fall through */
	case 2: d[1] = f; /* fall through */
	default: d[0] = f;
	}
}

/* Whether direct_span and class_blocks match the class tables (a unit test asks; debug builds
 * check at start). */
bool heap_tables_ok(void)
{
	for (unsigned c = 1; c < NCLASS; c++)
		if (class_blocks[c] != ((size_t)class_pages[c] << PAGE_SHIFT) / class_size[c]) return false;
	for (unsigned c = 1; c <= DIRECT_CLASSES; c++) {
		unsigned lo = class_size[c - 1] / 16 + (c > 1), hi = class_size[c] / 16;
		if (direct_span[c].lo != lo || direct_span[c].n != hi - lo + 1) return false;
		for (unsigned i = lo; i <= hi; i++)
			if (class_lut[i] != c) return false;
	}
	return class_size[DIRECT_CLASSES] == DIRECT_MAX;
}

static void list_push_front(heap_t *h, page_t *pg)
{
	page_t *first = h->pages[pg->cls];
	pg->prev = 0;
	pg->next = first == &page_empty ? 0 : ID(first);
	if (first != &page_empty) first->prev = ID(pg);
	else h->last[pg->cls] = ID(pg);
	set_first(h, pg->cls, pg);
}

/* At the end of the list: a page that comes back (it was full, or queued by a remote free) is
 * reached only after every page before it has been used up, so frees have gathered in it by
 * then and the visit pays for itself. Putting it next in line instead makes a page that got
 * one free block back go full again on the next malloc: a slow path per malloc. */
static void list_push_back(heap_t *h, page_t *pg)
{
	uint32_t last = h->last[pg->cls];
	if (!last) { list_push_front(h, pg); return; }
	pg->next = 0;
	pg->prev = last;
	PG(last)->next = ID(pg);
	h->last[pg->cls] = ID(pg);
}

static void list_remove(heap_t *h, page_t *pg)
{
	if (pg->prev) PG(pg->prev)->next = pg->next;
	else set_first(h, pg->cls, pg->next ? PG(pg->next) : &page_empty);
	if (pg->next) PG(pg->next)->prev = pg->prev;
	else h->last[pg->cls] = pg->prev;
	pg->next = pg->prev = 0;
}

/* ---- remote links ---- */
/* Links between blocks freed by other threads are stored xor a secret whose top bit is set:
 * a use-after-free write of a pointer or of plain data into such a link decodes to an address
 * far outside the range, which collect_remote refuses. (The owner's own list needs no key: a
 * link there can only lead to a block the live bitmap says is free, or malloc aborts.) */
static uintptr_t remote_key = (uintptr_t)1 << 63;

static inline block_t *remote_encode(block_t *b) { return (block_t *)((uintptr_t)b ^ remote_key); }
static inline block_t *remote_decode(block_t *e) { return (block_t *)((uintptr_t)e ^ remote_key); }
block_t *heap_remote_next(const block_t *b) { return remote_decode(b->next); }
uintptr_t heap_remote_key(void) { return remote_key; }

/* ---- collecting ---- */
/* Take the blocks other threads freed; their live bits are cleared here, where a second free of
 * the same block is caught. */
/* The rest of the list collect_remote is taking (links still encoded), while it runs: the leak
 * check treats those blocks as freed, as they are, though their live bits are still set. */
static __thread block_t *collecting __attribute__((tls_model("initial-exec")));
block_t *heap_collecting(void) { return collecting; }

static void collect_remote(page_t *pg)
{
	if (!atomic_load_explicit(&page_remote(pg)->thread_free, memory_order_relaxed)) return;
	uintptr_t tf = atomic_exchange_explicit(&page_remote(pg)->thread_free, 0, memory_order_acquire);
	if (!tf) return;
	uintptr_t start = pg->start;
	uint32_t n = 0;
	block_t *b = (block_t *)tf, *last = NULL;
	collecting = b;
	while (b) {
		/* b came from a link written while the block was freed, so it is checked before it
		 * is followed: a block of this run, still live (remote frees clear the bit here) */
		uint64_t bit = block_index(pg, (uintptr_t)b - start);
		if (bit >= pg->capacity) fatal_corrupt("malloc", b);
		uint64_t m = 1ull << (bit & 63), *w = &pg->live[bit >> 6];
		uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
		if (!(v & m)) fatal_pointer("free", b);
		__atomic_store_n(w, v & ~m, __ATOMIC_RELAXED);
		n++;
		last = b;
		b = remote_decode(b->next);
		collecting = b;
		last->next = b;                      /* a plain link from now on: the local list */
	}
	last->next = pg->free;
	pg->free = (block_t *)tf;
	pg->used -= n;
}

/* Carve up to one OS page worth of fresh blocks (at least one) into the free list. */
static void extend(page_t *pg)
{
	uint32_t total = class_blocks[pg->cls];
	if (pg->capacity >= total) return;
	uint32_t k = OS_PAGE / pg->block_size;
	if (k == 0) k = 1;
	if (k > total - pg->capacity) k = total - pg->capacity;
	uintptr_t start = page_start(pg) + (uintptr_t)pg->capacity * pg->block_size;
	block_t *head = pg->free;
	for (uint32_t i = k; i-- > 0;) {
		block_t *b = (block_t *)(start + (uintptr_t)i * pg->block_size);
		b->next = head;
		head = b;
	}
	pg->free = head;
	pg->capacity = (uint16_t)(pg->capacity + k);
}

/* Make pg's free list non-empty if it can be. */
static void refill(page_t *pg)
{
	collect_remote(pg);
	if (!pg->free) extend(pg);
}

/* An empty run leaves the heap: one-page runs are kept as spares (a page that empties and is
 * needed again a moment later costs no trip to the page allocator's lock), the rest go back. */
static void page_release(heap_t *h, page_t *pg)
{
	uint8_t q = atomic_load(&page_remote(pg)->qstate);
	while (q != Q_QUEUED && !atomic_compare_exchange_weak(&page_remote(pg)->qstate, &q, Q_GONE)) {}
	if (q == Q_QUEUED) {
		/* still on h->delayed: it stays off the list until the drain puts it back (relisting
		 * it here made tidy_heap's walk meet it again and again, a livelock at thread exit) */
		pg->used |= USED_UNLISTED;
		return;
	}
	if (class_pages[pg->cls] == 1 && h->nspare < HEAP_SPARES && !atomic_load(&h->abandoned)) {
		h->spare[h->nspare++] = pg;
		return;
	}
	pg->heap = NULL;
	h->nruns--;
	region_free(pg);
}

static void spares_flush(heap_t *h)
{
	while (h->nspare > 0) {
		page_t *pg = h->spare[--h->nspare];
		pg->heap = NULL;
		h->nruns--;
		region_free(pg);
	}
}

/* pg has nothing to give: take it off the list. The first remote free into it will queue it on
 * h->delayed for the owner to put back; a local free puts it back at once (at the end). Owner
 * and remote freer each write one word and then read the other's (qstate, thread_free): both
 * sides' accesses are sequentially consistent, so at least one of them sees the other. */
static void page_to_full(heap_t *h, page_t *pg)
{
	remote_t *r = page_remote(pg);
	list_remove(h, pg);
	pg->used |= USED_UNLISTED;
	/* Q_WATCH (it went full before and no remote free came since): the next remote free
	 * queues it, no barrier needed; Q_QUEUED: the drain puts it back. */
	if (atomic_load_explicit(&r->qstate, memory_order_relaxed) != Q_QUIET) return;
	uint8_t quiet = Q_QUIET;
	if (!atomic_compare_exchange_strong(&r->qstate, &quiet, Q_WATCH)) return;
	if (atomic_load(&r->thread_free) != 0) {
		/* a remote free raced in: keep the page listed; if it was queued, the drain skips it */
		pg->used &= ~USED_UNLISTED;
		list_push_back(h, pg);
	}
}

static void drain_delayed(heap_t *h)
{
	page_t *pg = atomic_exchange_explicit(&h->delayed, NULL, memory_order_acquire);
	while (pg) {
		remote_t *r = page_remote(pg);
		page_t *next = r->delayed_next;
		atomic_store_explicit(&r->qstate, Q_QUIET, memory_order_relaxed);
		if (pg->used & USED_UNLISTED) {
			pg->used &= ~USED_UNLISTED;
			list_push_back(h, pg);
		}
		pg = next;
	}
}

/* ---- heaps ---- */
static void heap_destructor(void *arg);
/* Set once the thread's heap went back at its exit: later frees (other libraries' thread-exit
 * code) hand their blocks over at once rather than make a heap for the pend table. */
static __thread bool heap_exited __attribute__((tls_model("initial-exec")));
#define HEAPLESS_FREES 64
static __thread uint8_t heapless_frees __attribute__((tls_model("initial-exec")));

/* Whether h still owns runs (full ones off its lists too). Read under heaps_lock, of abandoned
 * heaps (which gain no runs, so a stale non-zero is the only possible error, a safe one) or of
 * the caller's own. */
static bool heap_holds_runs(const heap_t *h)
{
	return __atomic_load_n(&h->nruns, __ATOMIC_RELAXED) != 0;
}

#define ADOPT_LOOK 4     /* abandoned heaps looked at for one that fits */

/* Under heaps_lock: the link to the abandoned heap to adopt, among the first ADOPT_LOOK. With
 * want_runs, the first that holds runs, else the first of all; without, the first that holds
 * none, else NULL. */
static heap_t **abandoned_pick(bool want_runs)
{
	heap_t **l = &heaps_abandoned;
	for (int i = 0; *l && i < ADOPT_LOOK; i++, l = &(*l)->next_abandoned)
		if (heap_holds_runs(*l) == want_runs) return l;
	return want_runs && heaps_abandoned ? &heaps_abandoned : NULL;
}

/* h->abandoned = v under h's lock (held by whoever acts for an abandoned heap). */
static void set_abandoned(heap_t *h, int v)
{
	pthread_mutex_lock(&h->lock);
	locks_held++;
	atomic_store(&h->abandoned, v);
	locks_held--;
	pthread_mutex_unlock(&h->lock);
}

/* Under heaps_lock: take the abandoned heap at *l off the list and make it owned again. */
static heap_t *adopt_locked(heap_t **l)
{
	heap_t *h = *l;
	*l = h->next_abandoned;
	set_abandoned(h, 0);
	return h;
}

/* Under heaps_lock: h, which the calling thread leaves, becomes abandoned. */
static void abandon_locked(heap_t *h)
{
	set_abandoned(h, 1);
	h->next_abandoned = heaps_abandoned;
	heaps_abandoned = h;
}

static void heap_set_tls(heap_t *h)
{
	heap_tls = h;
	if (heap_key_ok) pthread_setspecific(heap_key, h);
}

/* A heap for this thread: an abandoned one (with for_free, only one that holds no runs: a thread
 * that so far only frees would never tidy them), or a new one. */
static heap_t *heap_create(bool for_free)
{
	CONTIG_ASSERT(atomic_load(&G.state) == 2);     /* the entry points initialised */
	heap_t *h = NULL;
	pthread_mutex_lock(&heaps_lock);
	locks_held++;
	heap_t **l = abandoned_pick(!for_free);
	if (l) {
		h = adopt_locked(l);
	} else {
		h = meta_alloc(sizeof *h);
		if (h) {
			for (int c = 0; c < NCLASS; c++) h->pages[c] = h->fast[c] = &page_empty;
			for (int i = 0; i <= DIRECT_MAX / 16; i++) h->direct[i] = &page_empty;
			pthread_mutex_init(&h->lock, NULL);
			h->next_all = heaps_all;
			heaps_all = h;
		}
	}
	if (h) h->for_free = for_free;
	locks_held--;
	pthread_mutex_unlock(&heaps_lock);
	if (!h) return NULL;
	heap_set_tls(h);
	return h;
}

/* The first malloc of a thread whose heap was made for its frees (and holds no runs yet): a
 * thread that freed many blocks first, a predecessor's say, adopts an abandoned heap that holds
 * runs now, as it would have with a malloc first; its own empty heap is left for the next. */
static NOINLINE heap_t *heap_readopt(heap_t *h)
{
	h->for_free = false;
	if (heap_holds_runs(h)) return h;
	heap_flush_remote();
	pthread_mutex_lock(&heaps_lock);
	locks_held++;
	heap_t **l = abandoned_pick(true);
	heap_t *n = l && heap_holds_runs(*l) ? adopt_locked(l) : NULL;
	if (n) abandon_locked(h);
	locks_held--;
	pthread_mutex_unlock(&heaps_lock);
	if (!n) return h;
	heap_set_tls(n);
	return n;
}

heap_t *heap_get(void)
{
	heap_t *h = heap_tls;
	if (unlikely(h == &heap_none)) return heap_create(false);
	if (unlikely(h->for_free)) return heap_readopt(h);
	return h;
}

/* Called once from initialisation: thread exit hands the heap back through this key. */
void heap_init_key(void)
{
	uint64_t k = 0;
	if (os_syscall6(SYS_getrandom, (long)&k, sizeof k, GRND_NONBLOCK, 0, 0, 0) != (long)sizeof k)
		k = os_now_ms() * 0x9e3779b97f4a7c15ull ^ (uintptr_t)&k;
	remote_key = (uintptr_t)(k | (uint64_t)1 << 63);
	CONTIG_ASSERT(heap_tables_ok());
	heap_key_ok = pthread_key_create(&heap_key, heap_destructor) == 0;
}

/* Act as owner of pg (caller owns its heap or holds an abandoned heap's lock): take the free
 * blocks back; give the page up when nothing in it is live. */
static void tidy_page(heap_t *h, page_t *pg, bool keep_first)
{
	collect_remote(pg);     /* not refill: carving fresh blocks would touch memory nobody asked for */
	if (pg->used == 0 && !(keep_first && h->pages[pg->cls] == pg)) {
		list_remove(h, pg);
		page_release(h, pg);
	}
}

static void tidy_heap(heap_t *h, bool keep_first)
{
	drain_delayed(h);
	for (int c = 1; c < NCLASS; c++) {
		page_t *pg = h->pages[c];
		while (pg != &page_empty) {
			page_t *next = pg->next ? PG(pg->next) : &page_empty;
			tidy_page(h, pg, keep_first);
			pg = next;
		}
	}
}

static void heap_destructor(void *arg)
{
	heap_t *h = arg;
	if (!h || heap_tls != h) return;
	heap_flush_remote();
	tidy_heap(h, false);
	spares_flush(h);
	heap_tls = &heap_none;
	heap_exited = true;
	pthread_mutex_lock(&heaps_lock);
	locks_held++;
	abandon_locked(h);
	locks_held--;
	pthread_mutex_unlock(&heaps_lock);
}

/* ---- requested sizes, kept only while leaks are tracked (CONTIG_LEAKS) ---- */
/* One u16 per block (its live bit's number): block size minus the size asked (at most 32 KiB, since classes
 * are at most 25% apart). The tables hang off a small open hash keyed by page index. */
#define ASKED_SLOTS 65536u
static struct asked_slot { uint32_t page; uint16_t *tab; } *asked_map;

static uint16_t *asked_table(page_t *pg, bool create)
{
	if (!asked_map) {
		if (!create) return NULL;
		asked_map = meta_alloc(sizeof *asked_map * ASKED_SLOTS);
		if (!asked_map) return NULL;
	}
	uint32_t id = ID(pg);
	for (uint32_t i = (id * 2654435761u) % ASKED_SLOTS, n = 0; n < ASKED_SLOTS; n++, i = (i + 1) % ASKED_SLOTS) {
		if (asked_map[i].page == id) return asked_map[i].tab;
		if (asked_map[i].page == 0) {
			if (!create) return NULL;
			uint16_t *t = meta_alloc(LIVE_BITS * sizeof(uint16_t));
			if (!t) return NULL;
			asked_map[i].tab = t;
			asked_map[i].page = id;
			return t;
		}
	}
	return NULL;
}

/* pg is page_of(p): for a block of a multi-page class that can be a later page of its run. */
void heap_set_asked(page_t *pg, const void *p, size_t n)
{
	if (pg->kind == PK_CONT) pg -= pg->head_off;
	uint16_t *t = asked_table(pg, false);
	if (t) t[block_index(pg, (uintptr_t)p - page_start(pg))] = (uint16_t)(pg->block_size - n);
}

size_t heap_asked(const page_t *pg, const void *p)
{
	uint16_t *t = asked_table((page_t *)pg, false);
	if (!t) return pg->block_size;
	return pg->block_size - t[block_index(pg, (uintptr_t)p - page_start(pg))];
}

/* ---- slow paths ---- */
static page_t *new_page(heap_t *h, unsigned cls)
{
	page_t *pg = class_pages[cls] == 1 && h->nspare ? h->spare[--h->nspare] : NULL;
	if (!pg) {
		pg = region_alloc(class_pages[cls], PK_SMALL, 0);
		if (!pg) return NULL;
		h->nruns++;
	}
	uint32_t bs = class_size[cls];
	pg->heap = h;
	pg->block_size = bs;
	pg->cls = (uint8_t)cls;
	pg->capacity = 0;
	pg->used = 0;
	pg->free = NULL;
	pg->start = page_addr(page_idx(pg));
	pg->rot = (uint8_t)__builtin_ctz(bs);
	uint64_t odd = bs >> pg->rot, inv = odd;      /* Newton: each step doubles the correct bits */
	for (int i = 0; i < 5; i++) inv *= 2 - odd * inv;
	pg->inv = inv;
	atomic_store_explicit(&page_remote(pg)->thread_free, 0, memory_order_relaxed);
	atomic_store_explicit(&page_remote(pg)->qstate, Q_QUIET, memory_order_relaxed);
	/* One live bit per block, numbered by block_index: the bitmap is as short as it can be (a
	 * 160-byte class's is one cache line), so it stays in cache. */
	CONTIG_ASSERT(class_blocks[cls] <= LIVE_BITS);
	list_push_front(h, pg);
	if (G.slow_only && !asked_table(pg, true)) {
		list_remove(h, pg);
		page_release(h, pg);
		return NULL;
	}
	return pg;
}

void *heap_alloc_class(unsigned cls)
{
	if (heap_tls->pend_mask) heap_flush_remote();    /* the test inline: most slow paths have none */
	heap_t *h = heap_get();
	if (unlikely(!h)) { errno = ENOMEM; return NULL; }
	if (atomic_load_explicit(&h->delayed, memory_order_relaxed)) drain_delayed(h);
	page_t *pg = h->pages[cls];
	while (pg != &page_empty) {
		if (pg->free) break;
		refill(pg);
		page_t *next = pg->next ? PG(pg->next) : &page_empty;
		if (pg->free) {
			if (h->pages[cls] != pg) { list_remove(h, pg); list_push_front(h, pg); }
			break;
		}
		page_to_full(h, pg);
		pg = next;
	}
	if (pg == &page_empty) {
		pg = new_page(h, cls);
		if (!pg) return NULL;
		extend(pg);
	}
	h->n_malloc++;
	return page_pop(pg, pg->free);
}

void *heap_alloc_small(size_t n)
{
	unsigned cls = size_class(n);
	void *p = heap_alloc_class(cls);
	if (G.slow_only && p) {
		heap_set_asked(page_of(p), p, n);
		leak_note_new(p, n);
	}
	return p;
}

void *heap_corrupt(const void *b) { fatal_corrupt("malloc", b); }
void heap_invalid(const char *func, const void *p) { fatal_pointer(func, p); }

/* After a local free: the page emptied, or it was full and off the list. */
void heap_free_local_slow(page_t *pg)
{
	heap_t *h = pg->heap;
	if (pg->used & USED_UNLISTED) {
		/* it was full: back on the list, behind the page malloc is serving from */
		pg->used &= ~USED_UNLISTED;
		list_push_back(h, pg);
	}
	if (pg->used == 0 && h->pages[pg->cls] != pg) {
		list_remove(h, pg);
		page_release(h, pg);
	}
}

/* Hand a chain of blocks of pg (first .. last) to its owner with one atomic push. */
static void remote_push(page_t *pg, block_t *first, block_t *last)
{
	heap_t *h = pg->heap;
	remote_t *r = page_remote(pg);
	/* A chain's last block ends it with NULL until now. A second free of it joined the chain
	 * again as its first block and overwrote that link: the push below would overwrite it once
	 * more and the double free would go unseen (a second free of any other block of the chain
	 * makes a cycle, which the owner meets when it collects). */
	if (unlikely(last->next != NULL)) fatal_pointer("free", last);
	uintptr_t old = atomic_load_explicit(&r->thread_free, memory_order_relaxed);
	do last->next = remote_encode((block_t *)old);
	while (!atomic_compare_exchange_weak(&r->thread_free, &old, (uintptr_t)first));
	if (atomic_load(&r->qstate) == Q_WATCH) {
		uint8_t watch = Q_WATCH;
		if (atomic_compare_exchange_strong(&r->qstate, &watch, Q_QUEUED)) {
			page_t *top = atomic_load_explicit(&h->delayed, memory_order_relaxed);
			do r->delayed_next = top;
			while (!atomic_compare_exchange_weak(&h->delayed, &top, pg));
		}
	}
	if (unlikely(atomic_load_explicit(&h->abandoned, memory_order_acquire))) {
		/* Nobody owns the heap: act for it, so its memory drains as frees arrive. */
		if (pthread_mutex_trylock(&h->lock) == 0) {
			locks_held++;
			if (atomic_load(&h->abandoned)) {
				drain_delayed(h);
				if (!(pg->used & USED_UNLISTED) && pg->heap == h)
					tidy_page(h, pg, false);
			}
			locks_held--;
			pthread_mutex_unlock(&h->lock);
		}
	}
}

/* Remote frees are chained per run and handed over together: a consumer freeing a producer's
 * blocks pays one atomic push per chain, not one per block. A thread chains for up to
 * HEAP_PEND_WAYS runs at once (way = the run's index modulo the ways), so frees of mixed sizes,
 * which go to a different run nearly every time, still batch. A chain is handed over when it
 * reaches HEAP_PEND_BLOCKS blocks or HEAP_PEND_BYTES bytes, when another run needs its way, on
 * the thread's next malloc slow path, and at its exit: what a thread holds back is bounded
 * (at most 16 x 16 KiB; blocks above 8 KiB go at once). The live bits stay set until the owner
 * collects, where a second free of a block is still caught. */
static void pend_flush(heap_t *me, unsigned way)
{
	struct pending *w = &me->pend[way];
	page_t *pg = w->pg;
	me->pend_mask &= ~(1u << way);
	w->pg = NULL;
	remote_push(pg, w->first, w->last);
}

/* The blocks this thread freed into other threads' runs and has not handed over yet (up to max
 * into out): the leak check counts them as free. Runs in the thread itself (its signal handler),
 * which may have interrupted an update: every chain is walked within its count and the range. */
size_t heap_pending_blocks(void **out, size_t max)
{
	heap_t *me = heap_tls;
	size_t n = 0;
	if (me == &heap_none) return 0;
	for (unsigned i = 0; i < HEAP_PEND_WAYS; i++) {
		const struct pending *w = &me->pend[i];
		if (!w->pg) continue;
		size_t k = 0;
		for (block_t *b = w->first; b && range_has(b) && n < max && k <= w->n;
		     b = remote_decode(b->next), k++)
			out[n++] = b;
	}
	return n;
}

void heap_flush_remote(void)
{
	heap_t *me = heap_tls;
	while (me->pend_mask) pend_flush(me, (unsigned)__builtin_ctz(me->pend_mask));
}

/* heap_free_remote when b does not join a chain as one more than its first block. */
static NOINLINE void free_remote_slow(heap_t *me, page_t *pg, block_t *b, unsigned way)
{
	if (unlikely(me == &heap_none)) {
		/* A thread that only frees (a consumer) gets a heap for its pend table and its exit
		 * hook after HEAPLESS_FREES frees: a thread that frees first and then mallocs (one that
		 * took over another's blocks) should adopt an abandoned heap with its first malloc. This
		 * one adopts only a heap that holds no runs (no one would tidy them as frees came in).
		 * None while it holds a lock of ours or after its heap went back at exit: then the block
		 * is handed over at once. */
		int saved = errno;      /* free keeps errno */
		if (++heapless_frees < HEAPLESS_FREES || heap_exited || locks_held || !(me = heap_create(true))) {
			errno = saved;
			b->next = NULL;
			remote_push(pg, b, b);
			return;
		}
		errno = saved;
	}
	me->n_free++;
	struct pending *w = &me->pend[way];
	if (w->pg == pg) {              /* its last block: hand the chain over */
		b->next = remote_encode(w->first);
		w->first = b;
		pend_flush(me, way);
		return;
	}
	if (w->pg) pend_flush(me, way);
	uint32_t max = HEAP_PEND_BYTES / pg->block_size;
	b->next = NULL;
	/* a big block, or a run whose owner exited (remote frees are what drains it): at once */
	if (max <= 1 || atomic_load_explicit(&pg->heap->abandoned, memory_order_relaxed)) {
		remote_push(pg, b, b);
		return;
	}
	w->first = w->last = b;
	w->n = 1;
	w->max = max < HEAP_PEND_BLOCKS ? max : HEAP_PEND_BLOCKS;
	w->pg = pg;
	me->pend_mask |= 1u << way;
}

/* A free from a thread that does not own the page: b joins this thread's chain for pg. (The
 * shared heap_none's ways are all empty, so a thread without a heap always goes slow.) */
void heap_free_remote(page_t *pg, block_t *b, const char *func)
{
	(void)func;
	heap_t *me = heap_tls;
	unsigned way = (unsigned)page_idx(pg) & (HEAP_PEND_WAYS - 1);
	struct pending *w = &me->pend[way];
	if (likely(w->pg == pg) && w->n + 1 < w->max) {
		b->next = remote_encode(w->first);
		w->first = b;
		w->n++;
		me->n_free++;
		return;
	}
	free_remote_slow(me, pg, b, way);
}

/* Every heap's pages: take remote frees back (used before reports at exit). Only the calling
 * thread's heap and abandoned heaps are touched; live threads keep theirs. */
void heap_collect_all(void)
{
	heap_t *me = heap_tls;
	heap_flush_remote();
	if (me != &heap_none) {
		tidy_heap(me, true);
		spares_flush(me);
	}
	pthread_mutex_lock(&heaps_lock);
	locks_held++;
	for (heap_t *h = heaps_abandoned; h; h = h->next_abandoned) {
		pthread_mutex_lock(&h->lock);
		locks_held++;
		tidy_heap(h, false);
		locks_held--;
		pthread_mutex_unlock(&h->lock);
	}
	locks_held--;
	pthread_mutex_unlock(&heaps_lock);
}

void heap_count_calls(uint64_t *m, uint64_t *f, uint64_t *r)
{
	uint64_t a = 0, b = 0, c = 0;
	pthread_mutex_lock(&heaps_lock);
	locks_held++;
	for (heap_t *h = heaps_all; h; h = h->next_all) {
		a += h->n_malloc;
		b += h->n_free;
		c += h->n_realloc;
	}
	locks_held--;
	pthread_mutex_unlock(&heaps_lock);
	*m = a; *f = b; *r = c;
}

/* ---- fork: no lock may be held across it, and the child keeps only the forking thread ---- */
void heap_fork_prepare(void)
{
	pthread_mutex_lock(&heaps_lock);
	for (heap_t *h = heaps_all; h; h = h->next_all) pthread_mutex_lock(&h->lock);
	range_lock();
}

void heap_fork_parent(void)
{
	range_unlock();
	for (heap_t *h = heaps_all; h; h = h->next_all) pthread_mutex_unlock(&h->lock);
	pthread_mutex_unlock(&heaps_lock);
}

void heap_fork_child(void)
{
	region_fork_child();
	heap_t *me = heap_tls;
	for (heap_t *h = heaps_all; h; h = h->next_all) {
		pthread_mutex_init(&h->lock, NULL);
		if (h != me && !atomic_load(&h->abandoned)) {
			/* Its thread does not exist here, and fork may have caught it in the middle of a
			 * fast path (a block's live bit set and the block still on its list, a list half
			 * relinked): the heap is abandoned, so frees into it still drain it, but never
			 * adopted. Heaps already abandoned (their threads exited) stay on the list:
			 * heaps_lock, held across fork, kept it whole. */
			atomic_store(&h->abandoned, 1);
		}
	}
	pthread_mutex_init(&heaps_lock, NULL);
	locks_held = 0;
}
