/* heap.c - thread heaps and their pages of small blocks: refilling, remote frees (a freed bitmap
 * per run, taken back by the owner), full pages, thread exit and heap adoption, fork. */
#include "heap.h"
#include "region.h"
#include "range.h"
#include "leak_records.h"
#include "os.h"
#include <errno.h>

/* What an empty class list points to: its free list (in a page_hot_t of its own, before a live
 * bitmap nobody reads) is always empty, and its capacity 0, below which no index is. */
static page_hot_t empty_hot = { .free = FREE_END };
page_t page_empty = { .hot = &empty_hot };
/* A thread's heap before it has one: every fast path through it fails, and the slow path makes
 * (or adopts) the real heap. It owns no page, so frees through it are remote frees. */
heap_t heap_none = { .fast = { [0 ... NCLASS - 1] = &empty_hot } };
__thread heap_t *heap_tls __attribute__((tls_model("initial-exec"))) = &heap_none;
__thread page_hot_t *heap_direct[DIRECT_MAX / 16 + 1] __attribute__((tls_model("initial-exec"))) = {
	[0 ... DIRECT_MAX / 16] = &empty_hot };
/* Set once the thread's heap was handed back at its exit (heap_destructor): a thread-specific
 * destructor that runs after ours and allocates gets no heap of its own any more (in the last
 * round of destructors nothing would hand it back), but the shared dying heap, under its lock. */
static __thread int heap_dying __attribute__((tls_model("initial-exec")));
static heap_t *dying_heap;              /* made on first use, always abandoned, never adopted */
/* Heap locks (heaps_lock, a heap's lock) this thread holds: nothing that allocates may run then. */

static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;
static heap_t *heaps_all;
static heap_t *heaps_abandoned;
static pthread_key_t heap_key;
static int heap_key_ok;

static inline page_t *PG(uint32_t i) { return &G.pages[i - 1]; }
static inline uint32_t ID(page_t *pg) { return (uint32_t)page_idx(pg) + 1; }

/* ---- class lists (owner only) ---- */
/* The heap_direct[] entries of each class up to DIRECT_MAX: first index and count (1, 2, 4 or 8: four
 * classes per doubling). A new head page is written to all of them, by a jump into a run of
 * stores rather than a loop: it happens on every visit of a page in a random replacement. */
static const struct { uint8_t lo, n; } direct_span[DIRECT_CLASSES + 1] = {
	{ 0, 0 }, { 0, 2 }, { 2, 1 }, { 3, 1 }, { 4, 1 }, { 5, 1 }, { 6, 1 }, { 7, 1 }, { 8, 1 },
	{ 9, 2 }, { 11, 2 }, { 13, 2 }, { 15, 2 }, { 17, 4 }, { 21, 4 }, { 25, 4 }, { 29, 4 },
	{ 33, 8 }, { 41, 8 }, { 49, 8 }, { 57, 8 } };

/* The thread's heap_direct[] entries of class cls (at most DIRECT_CLASSES) point at f. */
static inline void direct_set(unsigned cls, page_hot_t *f)
{
	page_hot_t **d = &heap_direct[direct_span[cls].lo];
	switch (direct_span[cls].n) {
	case 8: d[7] = f; d[6] = f; d[5] = f; d[4] = f; /* fall through */
	case 4: d[3] = f; d[2] = f; /* fall through */
	case 2: d[1] = f; /* fall through */
	default: d[0] = f;
	}
}

static inline void set_first(heap_t *h, unsigned cls, page_t *pg)
{
	page_t *old = h->pages[cls];
	if (old != &page_empty) page_hot(old)->used &= ~USED_HEAD;
	if (pg != &page_empty) page_hot(pg)->used |= USED_HEAD;
	h->pages[cls] = pg;
	page_hot_t *f = G.slow_only ? &empty_hot : pg->hot;
	h->fast[cls] = f;
	if (cls <= DIRECT_CLASSES && h == heap_tls) direct_set(cls, f);
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

/* ---- collecting ---- */
/* Other threads free a block of pg by writing its tag (remote_tag) and setting its bit in the
 * run's freed bitmap with one atomic or (and its word's bit in remote->pending when the word was
 * empty): they link nothing, so the owner takes a whole word of frees back without following a
 * chain of links through memory another core wrote last. The live bits stay set until the owner
 * collects: a block freed by two threads, or by another thread and then by the owner, is caught
 * (here, by the freeing thread's atomic or, or by the owner's free seeing the tag). */
static void collect_remote(page_t *pg)
{
	/* nothing to take before another thread's first free into the run marked it PAGE_REMOTE
	 * (it does so before its bit goes in): a run only its owner frees into costs no look at
	 * its remote_t line, which is cold */
	if (!(__atomic_load_n(&pg->owner, __ATOMIC_RELAXED) & PAGE_REMOTE)) return;
	remote_t *r = page_remote(pg);
	if (!atomic_load_explicit(&r->pending, memory_order_relaxed)) return;
	uint64_t words = atomic_exchange(&r->pending, 0);
	_Atomic(uint64_t) *freed = page_freed(pg);
	uint64_t head = page_hot(pg)->free;
	uint32_t n = 0;
	while (words) {
		unsigned k = (unsigned)__builtin_ctzll(words);
		words &= words - 1;
		uint64_t m = atomic_load_explicit(&freed[k], memory_order_acquire);
		if (!m) continue;
		uint64_t v = page_live(pg)[k], all = m;
		if (unlikely(m & ~v)) {
			/* freed by another thread and, before, by the owner: a double free; unless fork
			 * caught this heap's thread between the two stores below: those blocks' live
			 * bits are clear and they are on no list (the thread held them), so they stay
			 * off it, and their freed bits go */
			if (!page_heap(pg)->forked)
				fatal_pointer("free",
				              block_at(pg, (uint64_t)k * 64 + (uint64_t)__builtin_ctzll(m & ~v)));
			m &= v;
		}
		/* live bit first, then the freed bit: a leak check stopping this thread in between
		 * sees each block free, never live and unfreed */
		__atomic_store_n(&page_live(pg)[k], v & ~m, __ATOMIC_RELAXED);
		/* a free into this word since the load (it set pending again, or will: it found
		 * the word's pending bit clear): take it in this round */
		if (atomic_fetch_and_explicit(&freed[k], ~all, memory_order_acq_rel) & ~all) words |= 1ull << k;
		while (m) {                /* (counted here: without -mpopcnt a popcount is a call) */
			uint64_t i = (uint64_t)k * 64 + (uint64_t)__builtin_ctzll(m);
			block_t *b = block_at(pg, i);
			m &= m - 1;
			/* the freer's tag still there: nothing wrote the block since it was freed
			 * (a use-after-free write, or the owner's free of it, a malloc and a write)
			 * and linking it cannot put a live block on the list */
			if (unlikely(b->tag != remote_tag(b))) fatal_corrupt("malloc", b);
			b->next = head;
			b->tag = FREE_TAG;
			head = i;
			n++;
		}
	}
	page_hot(pg)->free = head;
	page_hot(pg)->used -= n;
	page_heap(pg)->n_free += n;     /* counted by the owner (or whoever acts for it): the freeing
	                                   thread may have no heap at all */
}

/* Carve one OS page worth of fresh blocks into the free list; of larger blocks, up to EXTEND_MIN of
 * them within EXTEND_BYTES (at least one): carving writes a link into each, which makes its page
 * resident, and a class of 1-2 KiB blocks carved 2-4 at a time took the slow path every few
 * mallocs (burst: 3% more instructions in all). */
#define EXTEND_MIN   16u
#define EXTEND_BYTES (4u * OS_PAGE)
static void extend(page_t *pg)
{
	uint32_t total = class_blocks[pg->cls];
	/* a run that starts past its page (a colour, PF_WASHEAD) holds fewer when that is more than
	 * the room left over */
	uintptr_t room = page_addr(page_idx(pg)) + run_bytes(pg) - pg->start;
	if ((uintptr_t)total * pg->block_size > room) total = (uint32_t)(room / pg->block_size);
	if (pg->capacity >= total) return;
	uint32_t k = OS_PAGE / pg->block_size;
	if (k < EXTEND_MIN) {
		k = EXTEND_BYTES / pg->block_size;
		if (k > EXTEND_MIN) k = EXTEND_MIN;
		if (k == 0) k = 1;
	}
	if (k > total - pg->capacity) k = total - pg->capacity;
	uint64_t head = page_hot(pg)->free;
	for (uint64_t i = pg->capacity + k; i-- > pg->capacity;) {
		block_t *b = block_at(pg, i);
		b->next = head;
		b->tag = FREE_TAG;
		head = i;
	}
	page_hot(pg)->free = head;
	pg->capacity += k;
	pg->hot->capacity = pg->capacity;
}

/* Make pg's free list non-empty if it can be. */
static void refill(page_t *pg)
{
	collect_remote(pg);
	if (page_hot(pg)->free == FREE_END) extend(pg);
}

/* An empty run leaves the heap: one-page runs are kept as spares (a page that empties and is
 * needed again a moment later costs no trip to the page allocator's lock), the rest go back,
 * freed as of since (os_now_ms; 0: now). */
static void page_release_since(heap_t *h, page_t *pg, uint64_t since)
{
	uint8_t q = atomic_load(&page_remote(pg)->qstate);
	while (q != Q_QUEUED && !atomic_compare_exchange_weak(&page_remote(pg)->qstate, &q, Q_GONE)) {}
	if (q == Q_QUEUED) {
		/* still on h->delayed: it stays off the list until the drain puts it back (relisting
		 * it here made tidy_heap's walk meet it again and again, a livelock at thread exit) */
		page_hot(pg)->used |= USED_UNLISTED;
		return;
	}
	if (class_pages[pg->cls] == 1 && h->nspare < HEAP_SPARES && !atomic_load(&h->abandoned)) {
		h->spare[h->nspare++] = pg;
		return;
	}
	page_set_heap(pg, NULL);
	h->nruns--;
	region_free_since(pg, since);
}

static void page_release(heap_t *h, page_t *pg) { page_release_since(h, pg, 0); }

static void spares_flush(heap_t *h)
{
	while (h->nspare > 0) {
		page_t *pg = h->spare[--h->nspare];
		page_set_heap(pg, NULL);
		h->nruns--;
		region_free(pg);
	}
}

/* pg has nothing to give: take it off the list. The first remote free into it will queue it on
 * h->delayed for the owner to put back; a local free puts it back at once (at the end). Owner
 * and remote freer each write one word and then read the other's (qstate, pending): both
 * sides' accesses are sequentially consistent, so at least one of them sees the other.
 * A run no other thread has freed into yet (no PAGE_REMOTE) is not watched: the free that
 * marks it queues it whatever its state (free_remote_first), so its remote_t line stays
 * untouched. That load is sequentially consistent, as the mark is: either it sees the mark
 * and the run is watched as above, or the marking free comes after it in that order and
 * queues the run. */
static void page_to_full(heap_t *h, page_t *pg)
{
	list_remove(h, pg);
	page_hot(pg)->used |= USED_UNLISTED;
	if (!(__atomic_load_n(&pg->owner, __ATOMIC_SEQ_CST) & PAGE_REMOTE)) return;
	remote_t *r = page_remote(pg);
	/* Q_WATCH (it went full before and no remote free came since): the next remote free
	 * queues it, no barrier needed; Q_QUEUED: the drain puts it back. */
	if (atomic_load_explicit(&r->qstate, memory_order_relaxed) != Q_QUIET) return;
	uint8_t quiet = Q_QUIET;
	if (!atomic_compare_exchange_strong(&r->qstate, &quiet, Q_WATCH)) return;
	if (atomic_load(&r->pending) != 0) {
		/* a remote free raced in: keep the page listed; if it was queued, the drain skips it */
		page_hot(pg)->used &= ~USED_UNLISTED;
		list_push_back(h, pg);
	}
}

/* Whether the slow path of class cls ran since the last sweep (sweep_idle). */
static bool class_active(const heap_t *h, unsigned cls)
{
	return h->active[cls >> 6] & (1ull << (cls & 63));
}

/* The slow path of class cls runs: say so to the next sweep. */
static void class_mark_active(heap_t *h, unsigned cls)
{
	h->active[cls >> 6] |= 1ull << (cls & 63);
}

/* Put the full pages that got a remote free back on their lists, and take their remote frees
 * back now: a run that the other threads emptied goes back at once (as of since, 0: now), not
 * when malloc next reaches it in its list, which for a class the thread no longer asks for (a
 * producer that handed its blocks on and moved to other work) is never. A run that still holds
 * live blocks gets no word when the next frees come (it is on its list): the sweep looks at it
 * if its class goes idle. */
static void drain_delayed(heap_t *h, uint64_t since)
{
	page_t *pg = atomic_exchange_explicit(&h->delayed, NULL, memory_order_acquire);
	while (pg) {
		CONTIG_ASSERT(pg->kind == PK_SMALL && page_heap(pg) == h);
		remote_t *r = page_remote(pg);
		page_t *next = r->delayed_next;
		atomic_store_explicit(&r->qstate, Q_QUIET, memory_order_relaxed);
		if (page_hot(pg)->used & USED_UNLISTED) {
			page_hot(pg)->used &= ~USED_UNLISTED;
			list_push_back(h, pg);
			collect_remote(pg);
			/* (not the first of its list: that one stays, as tidy_page keeps it; nor the
			 * only one behind the first, where malloc goes next: a producer whose blocks
			 * come back as fast as it makes them would have it back at once as another
			 * run, one more to fault in; sweep_idle gives it back if the class idles.
			 * pg is last in its list now.) */
			page_t *first = h->pages[pg->cls];
			if (first != pg) {
				if ((page_hot(pg)->used & USED_MASK) == 0 && PG(pg->prev) != first) {
					list_remove(h, pg);
					page_release_since(h, pg, since);
				} else if (!h->sweep_at)
					h->sweep_at = 1;
			}
		}
		pg = next;
	}
}

/* ---- heaps ---- */
static void heap_destructor(void *arg);
static uint64_t heap_decay(uint64_t now);
static bool caches_flush(void);

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
	h->kept_ms = 0;                 /* what it kept is the new owner's now */
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

/* The thread's heap_direct[] as h's fast[] says (&heap_none: every list empty). */
static void direct_fill(const heap_t *h)
{
	for (unsigned c = 1; c <= DIRECT_CLASSES; c++) direct_set(c, h->fast[c]);
}

/* h becomes the thread's heap (&heap_none: it has none): heap_direct[] follows its fast[]. */
static void heap_set_tls(heap_t *h)
{
	heap_tls = h;
	direct_fill(h);
	if (heap_key_ok) pthread_setspecific(heap_key, h);
}

/* Under heaps_lock: a new, empty heap on the list of all. */
static heap_t *heap_new_locked(void)
{
	heap_t *h = meta_alloc(sizeof *h);
	if (!h) return NULL;
	for (int c = 0; c < NCLASS; c++) {
		h->pages[c] = &page_empty;
		h->fast[c] = &empty_hot;
	}
	pthread_mutex_init(&h->lock, NULL);
	h->next_all = heaps_all;
	heaps_all = h;
	return h;
}

/* A heap for this thread: an abandoned one (one that still holds runs first), or a new one. */
static heap_t *heap_create(void)
{
	CONTIG_ASSERT(atomic_load(&G.state) == 2);     /* the entry points initialised */
	heap_t *h = NULL;
	pthread_mutex_lock(&heaps_lock);
	locks_held++;
	heap_t **l = abandoned_pick(true);
	if (l) {
		h = adopt_locked(l);
	} else
		h = heap_new_locked();
	locks_held--;
	pthread_mutex_unlock(&heaps_lock);
	if (!h) return NULL;
	heap_set_tls(h);
	return h;
}

/* Called once from initialisation: thread exit hands the heap back through this key. */
void heap_init_key(void)
{
	CONTIG_ASSERT(heap_tables_ok());
	region_set_decay(heap_decay);
	region_set_cache_flush(caches_flush);
	heap_key_ok = pthread_key_create(&heap_key, heap_destructor) == 0;
}

/* Act as owner of pg (caller owns its heap or holds an abandoned heap's lock): take the free
 * blocks back; give the page up when nothing in it is live (true then). */
static bool tidy_page_since(heap_t *h, page_t *pg, bool keep_first, uint64_t since)
{
	collect_remote(pg);     /* not refill: carving fresh blocks would touch memory nobody asked for */
	if ((page_hot(pg)->used & USED_MASK) == 0 && !(keep_first && h->pages[pg->cls] == pg)) {
		list_remove(h, pg);
		page_release_since(h, pg, since);
		return true;
	}
	return false;
}

/* tidy_page_since as of now; true when pg was given back. */
static bool tidy_page(heap_t *h, page_t *pg, bool keep_first) { return tidy_page_since(h, pg, keep_first, 0); }

/* tidy_page for every run of h; the empty runs it gives back were freed as of since (0: now). */
static void tidy_heap_since(heap_t *h, bool keep_first, uint64_t since)
{
	drain_delayed(h, since);
	for (int c = 1; c < NCLASS; c++) {
		page_t *pg = h->pages[c];
		while (pg != &page_empty) {
			page_t *next = pg->next ? PG(pg->next) : &page_empty;
			tidy_page_since(h, pg, keep_first, since);
			pg = next;
		}
	}
}

static void tidy_heap(heap_t *h, bool keep_first) { tidy_heap_since(h, keep_first, 0); }

/* Under heaps_lock: act for abandoned heap h, giving back every empty run (freed as of since, 0:
 * now), and once more for a free into h that found its lock held and left drain_again to the
 * holder (drain_abandoned's protocol: the flag is stored before the lock is tried again). */
static void tidy_abandoned(heap_t *h, uint64_t since)
{
	do {
		pthread_mutex_lock(&h->lock);
		locks_held++;
		tidy_heap_since(h, false, since);
		locks_held--;
		pthread_mutex_unlock(&h->lock);
	} while (atomic_exchange(&h->drain_again, 0));
}

/* The thread leaves: its heap is abandoned, for a thread that starts later to adopt. Its empty
 * runs go back, but for the first of each class, which malloc was serving from: those wait half
 * a purge delay for the next thread (heap_decay), which then serves from memory that is resident
 * already instead of taking runs the purger gave back and faulting them in again (threads that
 * come and go, each with a working set of its own, peaked 1.5 times as high otherwise). */
static void heap_destructor(void *arg)
{
	heap_t *h = arg;
	heap_dying = 1;
	if (!h || heap_tls != h) return;
	large_cache_flush(h);
	bool keep = region_decay_ok();
	tidy_heap(h, keep);
	spares_flush(h);
	heap_tls = &heap_none;
	direct_fill(&heap_none);
	uint64_t now = os_now_ms() | 1;
	pthread_mutex_lock(&heaps_lock);
	locks_held++;
	abandon_locked(h);
	keep = keep && heap_holds_runs(h);
	if (keep) h->kept_ms = now;
	locks_held--;
	pthread_mutex_unlock(&heaps_lock);
	if (keep) region_decay_at(now + G.cfg.purge_ms / 2);
}

/* The purger's call (region_set_decay), with no library lock held: the pages of the large blocks
 * the thread caches have held for purge_ms go back to the OS, in place (large_cache.c); the
 * abandoned heaps that kept runs half a purge delay ago and were not adopted give their empty
 * runs back, freed as of the thread's exit, so that the purger returns them purge_ms after it,
 * as it would have without the wait. Returns when it is due next. */
static uint64_t heap_decay(uint64_t now)
{
	uint64_t next = UINT64_MAX, wait = G.cfg.purge_ms / 2;
	pthread_mutex_lock(&heaps_lock);
	locks_held++;
	for (heap_t *h = heaps_all; h; h = h->next_all) {
		uint64_t c = large_cache_decay(h, now);
		if (c < next) next = c;
	}
	for (heap_t *h = heaps_abandoned; h; h = h->next_abandoned) {
		uint64_t k = h->kept_ms;
		if (!k) continue;
		if (now < k + wait) {
			if (k + wait < next) next = k + wait;
			continue;
		}
		h->kept_ms = 0;
		tidy_abandoned(h, k);
	}
	locks_held--;
	pthread_mutex_unlock(&heaps_lock);
	return next;
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
	pg = page_run_head(pg);
	uint16_t *t = asked_table(pg, false);
	if (t) t[block_index(pg, p)] = (uint16_t)(pg->block_size - n);
}

size_t heap_asked(const page_t *pg, const void *p)
{
	uint16_t *t = asked_table((page_t *)pg, false);
	if (!t) return pg->block_size;
	return pg->block_size - t[block_index(pg, p)];
}

/* ---- slow paths ---- */
/* A spare for cls: one that last served cls if there is one (see new_page), else the last. */
static page_t *spare_take(heap_t *h, unsigned cls)
{
	int k = h->nspare - 1;
	for (int i = 0; i < h->nspare; i++)
		if (h->spare[i]->cls == cls) { k = i; break; }
	page_t *pg = h->spare[k];
	h->spare[k] = h->spare[--h->nspare];
	return pg;
}

/* Where in pg's page the first block of a run of cls starts (classes.h): 0, or for a coloured
 * class one of the size / 64 multiples of 64 bytes below the block size, picked by a hash of the
 * page's index (deterministic, as every address is: SPEC's Determinism) so that runs next to
 * each other, and runs at the same place in different 2 MiB chunks, differ. A run on a page whose
 * start may be a large block's stale pointer (PF_WASHEAD) starts past it, by the largest power of
 * two that divides the block size (64 at least), which keeps every block as aligned as the class
 * promises: no block of the run has that address, so a second free of the large block finds no
 * block there (its offset from the run's start wraps round), whoever's free it is, and no
 * free-list link, not even a use-after-free write of 0, leads there. */
static uintptr_t run_colour(const page_t *pg, unsigned cls)
{
	if (pg->flags & PF_WASHEAD) {
		uint32_t low = class_size[cls] & -class_size[cls];
		return low > 64 ? low : 64;
	}
	if (!class_coloured(cls)) return 0;
	uint32_t h = (uint32_t)page_idx(pg) * 0x9e3779b1u;
	return (uintptr_t)((h >> 16) % (class_size[cls] / 64)) * 64;
}

/* pg becomes an empty run of cls, owned by h, nothing carved yet. */
static void page_init(heap_t *h, page_t *pg, unsigned cls)
{
	uint32_t bs = class_size[cls];
	page_hot_t *hot = page_hot(pg);
	page_set_heap(pg, h);
	pg->block_size = bs;
	pg->cls = (uint8_t)cls;
	pg->start = page_addr(page_idx(pg)) + run_colour(pg, cls);
	pg->capacity = 0;
	hot->used = 0;
	hot->free = FREE_END;
	pg->rot = (uint8_t)__builtin_ctz(bs);
	uint64_t odd = bs >> pg->rot, inv = odd;      /* Newton: each step doubles the correct bits */
	for (int i = 0; i < 5; i++) inv *= 2 - odd * inv;
	pg->inv = inv;
	hot->start = pg->start;
	hot->block_size = bs;
	hot->capacity = pg->capacity;
	page_remote(pg)->page = pg;
}

/* A heap that owns HUGE_MIN_RUNS small runs (2 MiB of them) is big: its next one-page runs come
 * from huge chunks, advised MADV_HUGEPAGE before anything touches them (region_alloc_run, huge.c):
 * one page fault and one TLB entry for 32 runs. */
#define HUGE_MIN_RUNS 32u
static page_t *run_take(heap_t *h, int flags)
{
	page_t *pg = region_alloc_run(h->nruns >= HUGE_MIN_RUNS, flags);
	if (pg) h->nruns++;
	return pg;
}

/* A heap with a working set of its own takes its one-page runs a few at a time: runs taken one
 * by one while other threads take theirs lie interleaved with theirs, and so do their
 * descriptors and bitmaps, neighbouring cache lines that different cores write on every malloc
 * and free (the adjacent-line prefetcher pulls lines in pairs). The extra runs wait as spares,
 * made ready for cls, which the next run of any class takes first. Only pages that are free
 * already and fit under the limit: a spare never grows the range or costs a limit hit. */
#define SPARE_FILL_RUNS 8u            /* a heap owning fewer runs takes them one at a time */
static void spares_fill(heap_t *h, unsigned cls)
{
	if (h->nruns < SPARE_FILL_RUNS || class_pages[cls] != 1) return;
	int e = errno;
	while (h->nspare < HEAP_SPARES) {
		page_t *pg = run_take(h, RUN_SPARE);
		if (!pg) break;
		page_init(h, pg, cls);
		h->spare[h->nspare++] = pg;
	}
	errno = e;
}

/* A run for cls that is no spare: one page from the huge chunks or the page runs, more from the
 * page runs. */
static page_t *run_new(heap_t *h, unsigned cls)
{
	page_t *pg;
	if (class_pages[cls] == 1) return run_take(h, 0);
	if ((pg = region_alloc(class_pages[cls], PK_SMALL, 0)) != NULL) h->nruns++;
	return pg;
}

static page_t *new_page(heap_t *h, unsigned cls)
{
	page_t *pg = class_pages[cls] == 1 && h->nspare ? spare_take(h, cls) : NULL;
	if (pg && pg->cls == cls) {
		/* it served this class and emptied: every block it carved is on its free list, its
		 * bitmaps are clear, so it is ready as it is (a program that frees whole bursts and
		 * allocates them again skips carving the run every time) */
		CONTIG_ASSERT(page_hot(pg)->used == 0 && page_heap(pg) == h && page_remote(pg)->page == pg);
	} else {
		if (!pg) {
			bool tried = h == heap_tls && heap_limit_try();
			pg = run_new(h, cls);
			if (heap_limit_again(tried, pg != NULL)) pg = run_new(h, cls);
			if (!pg) return NULL;
			spares_fill(h, cls);
		}
		page_init(h, pg, cls);
	}
	atomic_store_explicit(&page_remote(pg)->pending, 0, memory_order_relaxed);
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

static void *alloc_class_in(heap_t *h, unsigned cls);

/* A block for a thread whose heap was handed back already (heap_dying): from the dying heap,
 * under its lock, as whoever acts for an abandoned heap; the heap stays abandoned, so frees of
 * its blocks drain it as for any other. */
static NOINLINE void *alloc_dying(unsigned cls)
{
	heap_t *h = __atomic_load_n(&dying_heap, __ATOMIC_ACQUIRE);
	if (!h) {
		pthread_mutex_lock(&heaps_lock);
		locks_held++;
		h = dying_heap;
		if (!h && (h = heap_new_locked()) != NULL) {
			atomic_store(&h->abandoned, 1);
			__atomic_store_n(&dying_heap, h, __ATOMIC_RELEASE);
		}
		locks_held--;
		pthread_mutex_unlock(&heaps_lock);
		if (!h) { errno = ENOMEM; return NULL; }
	}
	pthread_mutex_lock(&h->lock);
	locks_held++;
	void *p = alloc_class_in(h, cls);
	locks_held--;
	pthread_mutex_unlock(&h->lock);
	return p;
}

/* Sweeping. A run the drain put back with live blocks left gets the rest of its remote frees
 * without a word to the owner; if its class is still asked for, malloc reaches it and takes them,
 * but a class the thread stopped asking for would keep it, emptied, for good. So while such runs
 * may exist, every SWEEP_EVERY slow paths look at the clock, and every sweep_ms (from half the
 * purge delay, doubling while sweeps give nothing back, up to SWEEP_MAX_MS) take back the remote
 * frees of the runs of the classes whose slow path did not run since the last sweep (not their
 * first run, which stays, as an exiting thread's does), and give the emptied ones back. The
 * busy classes are left to malloc, which visits their runs anyway. */
#define SWEEP_EVERY 64
#define SWEEP_MAX_MS 10000
#define SWEEP_RUNS_MS 32

static NOINLINE void sweep_idle(heap_t *h)
{
	uint64_t now = os_now_ms();
	uint32_t base = (uint32_t)(G.cfg.purge_ms / 2);
	if (h->sweep_at == 1) {                 /* wanted since the last look: the wait starts now */
		h->sweep_ms = base;
		h->sweep_at = now + base;
		return;
	}
	if (now < h->sweep_at) return;
	/* (not wanted while it runs: a run given back may start the purger, whose pthread_create
	 * allocates, and a malloc down the slow path then must not sweep the lists walked here) */
	h->sweep_at = 0;
	bool left = false;
	uint32_t gave = 0, walked = 0;
	for (int c = 1; c < NCLASS; c++) {
		page_t *first = h->pages[c];
		if (first == &page_empty || !first->next) continue;
		if (class_active(h, (unsigned)c)) {
			left = true;            /* the runs behind its first may get frees: look again */
			continue;
		}
		for (page_t *pg = PG(first->next); pg != &page_empty;) {
			page_t *next = pg->next ? PG(pg->next) : &page_empty;
			walked++;
			if (__atomic_load_n(&pg->owner, __ATOMIC_RELAXED) & PAGE_REMOTE) {
				if (tidy_page(h, pg, true)) gave++;
				else left = true;       /* (pg is not its class's first) */
			}
			pg = next;
		}
	}
	for (size_t i = 0; i < sizeof h->active / sizeof h->active[0]; i++) h->active[i] = 0;
	if (!left) return;
	uint32_t cap = base > SWEEP_MAX_MS ? base : SWEEP_MAX_MS;
	if (gave) h->sweep_ms = base;
	else h->sweep_ms = h->sweep_ms == 0 ? 1 : h->sweep_ms > cap / 2 ? cap : h->sweep_ms * 2;
	/* and at least 1 ms for every SWEEP_RUNS_MS runs walked: the walk reads up to three lines
	 * a run, cold in a big heap (about 0.3 us), so sweeping it takes about 1% of its time */
	uint32_t least = walked / SWEEP_RUNS_MS;
	h->sweep_at = now + (h->sweep_ms > least ? h->sweep_ms : least);
}

/* This thread's heap, made (or adopted) when it has none yet: for a thread whose first calls are
 * for large blocks, which its cache of them needs (large_cache.c). NULL while the thread exits,
 * under a library lock, or when none can be made. */
heap_t *heap_of_thread(void)
{
	heap_t *h = heap_tls;
	if (likely(h != &heap_none)) return h;
	if (heap_dying || locks_held) return NULL;
	return heap_create();
}

void *heap_alloc_class(unsigned cls)
{
	heap_t *h = heap_tls;
	if (unlikely(h == &heap_none)) {
		if (unlikely(heap_dying)) return alloc_dying(cls);
		h = heap_create();
		if (unlikely(!h)) { errno = ENOMEM; return NULL; }
	}
	return alloc_class_in(h, cls);
}

static void *alloc_class_in(heap_t *h, unsigned cls)
{
	if (atomic_load_explicit(&h->delayed, memory_order_relaxed)) drain_delayed(h, 0);
	class_mark_active(h, cls);
	if (unlikely(h->sweep_at) && ++h->sweep_tick % SWEEP_EVERY == 0) sweep_idle(h);
	page_t *pg = h->pages[cls];
	while (pg != &page_empty) {
		if (page_hot(pg)->free != FREE_END) break;
		refill(pg);
		page_t *next = pg->next ? PG(pg->next) : &page_empty;
		if (page_hot(pg)->free != FREE_END) {
			if (h->pages[cls] != pg) { list_remove(h, pg); list_push_front(h, pg); }
			break;
		}
		page_to_full(h, pg);
		pg = next;
	}
	if (pg == &page_empty) {
		pg = new_page(h, cls);
		if (!pg) return NULL;
		if (page_hot(pg)->free == FREE_END) extend(pg);
	}
	return page_pop(pg);
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

/* Named: the block a link that is an index of the run leads to (a live one), or what the link
 * holds when it is no such index (an address a use-after-free write left, most often). */
void *heap_corrupt(const page_hot_t *hot, uint64_t i)
{
	fatal_corrupt("malloc", i < hot->capacity ? (void *)hot_block(hot, i) : (void *)(uintptr_t)i);
}
void heap_invalid(const char *func, const void *p) { fatal_pointer(func, p); }

/* After a local free: the page emptied, or it was full and off the list. */
void heap_free_local_slow(page_t *pg)
{
	heap_t *h = page_heap(pg);
	if (page_hot(pg)->used & USED_UNLISTED) {
		/* it was full: back on the list, behind the page malloc is serving from */
		page_hot(pg)->used &= ~USED_UNLISTED;
		list_push_back(h, pg);
	}
	if (page_hot(pg)->used == 0 && h->pages[pg->cls] != pg) {
		list_remove(h, pg);
		page_release(h, pg);
	}
}

/* A thread with no heap yet frees a block of an abandoned heap (a thread of a pool that starts
 * by freeing what the thread before it left): it adopts that heap, as its first malloc would
 * adopt one, and the free is its own. Freeing through the heap it does not have would mark the
 * run PAGE_REMOTE for good, and every free of the run's blocks by the thread that adopts the
 * heap next would look at their tags. True when the caller now owns h. */
#define ADOPT_OWNER_LOOK 16     /* abandoned heaps looked at for h */
static NOINLINE bool adopt_owner(heap_t *h)
{
	if (heap_dying || locks_held || !atomic_load_explicit(&h->abandoned, memory_order_relaxed))
		return false;
	bool got = false;
	pthread_mutex_lock(&heaps_lock);
	locks_held++;
	heap_t **l = &heaps_abandoned;
	for (int i = 0; *l && *l != h && i < ADOPT_OWNER_LOOK; i++) l = &(*l)->next_abandoned;
	if (*l && *l == h) {
		adopt_locked(l);
		got = true;
	}
	locks_held--;
	pthread_mutex_unlock(&heaps_lock);
	if (got) heap_set_tls(h);
	return got;
}

static NOINLINE void drain_abandoned(heap_t *h, page_t *pg);

/* Push the run whose remote_t is r on its heap's delayed stack, once its qstate went to Q_QUEUED
 * (which pins it): the run and its heap are read from r after that, never from a descriptor
 * the caller found before. */
static void queue_run(remote_t *r)
{
	page_t *q = r->page;
	heap_t *qh = page_heap(q);
	page_t *top = atomic_load_explicit(&qh->delayed, memory_order_relaxed);
	do r->delayed_next = top;
	while (!atomic_compare_exchange_weak(&qh->delayed, &top, q));
}

/* After a remote free's bit went in, what is rare: telling the owner (pending, and the run's
 * queue state), and draining a heap nobody owns. */
static NOINLINE void free_remote_tell(page_t *pg, remote_t *r, heap_t *h, uint64_t wm)
{
	/* The owner clears pending before it reads the words, and looks at a word again when a bit
	 * came into it while it took the word's bits: a set pending bit read after the bit went in
	 * (both sequentially consistent: a plain load on x86) means the owner has yet to take this
	 * word. Else tell the owner. Owner and freer each write one word and then read the other's
	 * (qstate, pending) in page_to_full: both are sequentially consistent. */
	if (!(atomic_load(&r->pending) & wm) &&
	    !atomic_fetch_or(&r->pending, wm) && atomic_load(&r->qstate) == Q_WATCH) {
		/* Once the bit is in, the owner may take it, empty the run, give it back, and the
		 * chunk may serve another run (of another heap) that went full since: pg and h may
		 * be stale here. The queued state pins the run whose line this is (page_release
		 * leaves a queued run alone), so the run and its heap are read after it is won. */
		uint8_t watch = Q_WATCH;
		if (atomic_compare_exchange_strong(&r->qstate, &watch, Q_QUEUED)) queue_run(r);
	}
	if (unlikely(atomic_load_explicit(&h->abandoned, memory_order_acquire)))
		drain_abandoned(h, pg);
}

/* The first free of a run by a thread that does not own it (the one whose or set PAGE_REMOTE):
 * the owner may have taken the run off its list without watching it (page_to_full), so it is
 * queued now, watched or not, for the owner's drain to put back if it is off its list (the
 * drain leaves a listed run where it is). Before this free's bit goes in: the block, live
 * until then, pins the run, so the line is still this run's. */
static NOINLINE void free_remote_first(remote_t *r)
{
	uint8_t q = atomic_load(&r->qstate);
	while (q == Q_QUIET || q == Q_WATCH)
		if (atomic_compare_exchange_weak(&r->qstate, &q, Q_QUEUED)) {
			queue_run(r);
			return;
		}
}

/* A free from a thread that does not own pg: b's bit joins the run's freed bitmap. The common
 * case (the owner told already, its heap owned) makes no call, so that it saves no registers:
 * every rare turn is a jump to a function of its own. */
static inline void free_remote_bit(page_t *pg, void *b, uint64_t bit, const char *func, uintptr_t ow)
{
	heap_t *h = (heap_t *)(ow & ~PAGE_REMOTE);
	uint64_t m = 1ull << (bit & 63), wm = 1ull << (bit >> 6);
	/* The run's metadata, read while b is live and so pins the run: once b's bit is in, the
	 * owner may take it, give the run back, and the page may become another kind of run whose
	 * fields overlay hot (a freer preempted right after its bit went in then read pending
	 * through a run length: SIGSEGV, in 4 of 200 runs of larsongen 1 4 and 0.5 4 side by side;
	 * none in 160 since). The line itself is never unmapped: read late, it is at worst another
	 * run's, whose pending bit only makes this free tell its owner for nothing (free_remote_tell
	 * pins the run before it acts). */
	remote_t *r = page_remote(pg);
	/* Mark the run PAGE_REMOTE for its owner's free (heap_free_checked) and its slow path, once:
	 * the mark stays until the run is given back, so it is set before this free's bit goes in.
	 * The free that sets it queues the run (free_remote_first). */
	if (!(ow & PAGE_REMOTE) &&
	    !(__atomic_fetch_or(&pg->owner, PAGE_REMOTE, __ATOMIC_SEQ_CST) & PAGE_REMOTE))
		free_remote_first(r);
	/* The tag first (the block is the freer's to write now: its live bit, checked by the
	 * caller, says nobody freed it before), then the bit: whoever acquires the bit sees the tag
	 * (the collect checks it), and an owner's free ordered after this one sees both. */
	((block_t *)b)->tag = remote_tag(b);
	/* (only the one bit of the old value is used: one locked bts, no compare-exchange loop) */
	if (unlikely(atomic_fetch_or_explicit(&page_freed(pg)[bit >> 6], m, memory_order_seq_cst) & m)) {
		heap_invalid(func, b);          /* freed by another thread already, not collected yet */
		return;
	}
	if (likely(atomic_load(&r->pending) & wm) &&
	    likely(!atomic_load_explicit(&h->abandoned, memory_order_acquire)))
		return;
	free_remote_tell(pg, r, h, wm);
}

/* The remote free of a thread with no heap yet, of a block of an abandoned heap: it may adopt
 * that heap (adopt_owner). */
static NOINLINE void free_adopting(page_t *pg, void *b, uint64_t bit, const char *func, uintptr_t ow)
{
	if (adopt_owner((heap_t *)(ow & ~PAGE_REMOTE))) {
		heap_free_checked(pg, b, bit, func);        /* the owner's free now */
		return;
	}
	free_remote_bit(pg, b, bit, func, ow);
}

/* A thread with no heap (a consumer that never mallocs frees every block this way) tells an
 * abandoned owner apart here, so that the common case, a live owner, makes no call and saves no
 * registers. */
void heap_free_remote(page_t *pg, void *b, uint64_t bit, const char *func)
{
	uintptr_t ow = __atomic_load_n(&pg->owner, __ATOMIC_RELAXED);
	if (unlikely(heap_tls == &heap_none) &&
	    unlikely(atomic_load_explicit(&((heap_t *)(ow & ~PAGE_REMOTE))->abandoned, memory_order_relaxed))) {
		free_adopting(pg, b, bit, func, ow);
		return;
	}
	free_remote_bit(pg, b, bit, func, ow);
}

/* Nobody owns h: act for it, so that its memory drains as frees arrive. A free that finds the
 * lock taken leaves drain_again for the holder, which looks at it after it unlocks and then
 * collects the whole heap (it cannot know which runs): the last frees of a run used to be left
 * for a next free that never came, and the run stayed resident and counted live for good. */
static NOINLINE void drain_abandoned(heap_t *h, page_t *pg)
{
	bool whole = false;
	for (;;) {
		if (pthread_mutex_trylock(&h->lock) != 0) {
			atomic_store(&h->drain_again, 1);
			if (pthread_mutex_trylock(&h->lock) != 0) break;   /* the holder will see it */
		}
		locks_held++;
		if (atomic_load(&h->abandoned)) {
			drain_delayed(h, 0);
			if (whole) tidy_heap(h, false);
			/* pg may have been given back since the bit went in, and even made another
			 * kind of run, whose fields overlay hot: it is h's only while it is a small
			 * run whose owner is h (under h's lock nothing gives h's runs back), and only
			 * then is its page_hot_t read */
			else if (__atomic_load_n(&pg->kind, __ATOMIC_ACQUIRE) == PK_SMALL && page_heap(pg) == h &&
			         !(page_hot(pg)->used & USED_UNLISTED))
				tidy_page(h, pg, false);
		}
		locks_held--;
		pthread_mutex_unlock(&h->lock);
		if (!atomic_exchange(&h->drain_again, 0)) break;
		whole = true;
	}
	region_purger_kick();
}

/* Every thread cache's freed large blocks back to the runs (large_cache.c): whether there were any. */
static bool caches_flush(void)
{
	bool any = false;
	pthread_mutex_lock(&heaps_lock);
	locks_held++;
	for (heap_t *h = heaps_all; h; h = h->next_all) any |= large_cache_flush(h);
	locks_held--;
	pthread_mutex_unlock(&heaps_lock);
	return any;
}

/* Take remote frees back into the calling thread's heap and every abandoned heap, and give back
 * their empty runs (the calling heap's first run of each class kept when keep_first: malloc
 * serves from it) and the calling heap's spares, and every thread cache's freed large blocks.
 * Live threads keep their runs. */
static void collect_all(bool keep_first)
{
	heap_t *me = heap_tls;
	if (me != &heap_none) {
		tidy_heap(me, keep_first);
		spares_flush(me);
	}
	pthread_mutex_lock(&heaps_lock);
	locks_held++;
	for (heap_t *h = heaps_abandoned; h; h = h->next_abandoned) tidy_abandoned(h, 0);
	locks_held--;
	pthread_mutex_unlock(&heaps_lock);
	caches_flush();
	region_purger_kick();
}

/* Every heap's pages that this thread may touch (malloc_trim, contig_purge, reports at exit). */
void heap_collect_all(void) { collect_all(true); }

/* SPEC: what can be returned is, before a request fails at the limit. The runs a thread heap
 * keeps empty (its spares, and the first run of each class, which malloc serves from) and the
 * abandoned heaps' empty runs count as committed; only their owner, or whoever holds an
 * abandoned heap's lock, may give them back. So a request from a thread that holds no library
 * lock is tried first without counting a refusal (limit_retry), and when the limit refused it,
 * those runs go back and it is tried once more; that one counts. A request the range has no room
 * for is tried once more too when the thread caches held freed large blocks: they go back to
 * the runs first, where they may merge into what it needs. */
bool heap_limit_try(void)
{
	if (locks_held) return false;
	limit_retry = 1;
	return true;
}

bool heap_limit_again(bool tried, bool served)
{
	limit_retry = 0;
	if (served || !tried) return false;
	if (limit_refused) {
		collect_all(false);
		return true;
	}
	/* a full range: the freed large blocks the thread caches hold may be what it needs, side by
	 * side once they are free runs again */
	return caches_flush();
}

void heap_count(heap_counts_t *c)
{
	*c = (heap_counts_t){ 0 };
	pthread_mutex_lock(&heaps_lock);
	locks_held++;
	for (heap_t *h = heaps_all; h; h = h->next_all) {
		c->frees += h->n_free;
		c->reallocs += h->n_realloc;
		c->rmade += h->n_rmade;
		c->rfreed += h->n_rfreed;
		c->cache_reused += h->n_lc_reused;
		large_cache_count(h, &c->cached_blocks, &c->cached_bytes);
	}
	locks_held--;
	pthread_mutex_unlock(&heaps_lock);
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
			 * heaps_lock, held across fork, kept it whole. Its collects forgive what a
			 * collect cut in two leaves (forked). */
			atomic_store(&h->abandoned, 1);
			h->forked = true;
		}
	}
	pthread_mutex_init(&heaps_lock, NULL);
	locks_held = 0;
}
