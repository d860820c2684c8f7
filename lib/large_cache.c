/* large_cache.c - each thread keeps the last few large blocks it freed, for its next malloc of
 * about their size.
 *
 * A large block is a run of pages, made and given back under the range lock. Two threads that
 * free and make blocks of a few hundred KiB took that lock in turn on every call: with a 1 MiB
 * buffer freed and made again in a loop by each of two threads, 36% of the time was in
 * pthread_mutex_lock, and each thread's loop took three to four times as long as one thread's
 * alone. So a thread's free of a block of up to LCACHE_PAGES pages puts it in one of its heap's
 * LCACHE_N slots instead, and its next malloc of a size the block fits, with at most a quarter of
 * the size to spare, takes it back: no lock, no look at the free runs, no page descriptor
 * written.
 *
 * A cached block is freed memory as far as the program is concerned: its head says PK_LARGE still
 * (the runs see a block there, and keep their hands off its pages), with ASKED_CACHED as its size
 * asked, which free, realloc, free_sized and malloc_usable_size take for what it is, a block no
 * longer live (alloc.c). The free that caches it claims it with a compare-and-swap of that field,
 * so two frees of it that race are caught as well as two that follow one another. The statistics
 * count it as freed (heap_count).
 *
 * The cache pays where sizes come again (a buffer freed and made again); where they do not, its
 * blocks wait unused and hold memory the runs would have given the next block, and the heap grows
 * past where it would have (24 slots of random 64 KiB - 8 MiB blocks, six seeds: peak RSS 6%
 * higher with four slots that took every free, 4% with two, 1% with one). So there are two slots,
 * and a free is cached only when its block would have served one of the thread's last two large
 * mallocs: sizes that came lately, and so may come again.
 *
 * Where blocks go never depends on time (SPEC, Determinism): a block leaves its slot when a malloc
 * takes it, when a newer free wants the slot (the oldest goes back to the runs), when its thread
 * exits, and before a request fails at CONTIG_LIMIT or malloc_trim returns (heap.c, collect_all),
 * all of them calls of the program's. What time does is what it does to the free runs: the pages
 * of a block that waited purge_ms go back to the OS where the block is (the purger's decay, which
 * heap.c runs for every heap), at once under CONTIG_PURGE_MS=0; a malloc that takes a purged
 * block commits its pages again, under the range lock (region_recommit_block). A mapping call
 * over a cached block (the program's munmap or MAP_FIXED over memory it freed) sends every cache
 * back to the runs first (mmap_pages.c), as does a request the range has no room for (heap.c).
 * Not while leaks are tracked, nor under RLIMIT_AS (a cached block holds address space the next
 * thread stack may need: the runs give the top of the heap back): there every free goes to the
 * runs, as before.
 *
 * Only the owner puts blocks in its slots. The owner and collect_all take them out with a
 * compare-and-swap; the purger marks a slot BUSY while it purges the slot's block, and puts the
 * block back; whoever finds BUSY waits for that (the owner only: the others hold heaps_lock, as
 * the purger does). */
#include <sched.h>
#include "heap.h"
#include "region.h"
#include "os.h"
#include "range.h"

#define BUSY ((page_t *)1)

static bool purged(const page_t *pg) { return !(pg->flags & PF_DIRTY); }

/* What slot i holds, once the purger is done with it. */
static page_t *slot_load(heap_t *h, int i)
{
	page_t *pg;
	for (unsigned spin = 0; (pg = atomic_load_explicit(&h->lcache[i], memory_order_acquire)) == BUSY; spin++)
		if (spin > 64) sched_yield();
	return pg;
}

/* Empty slot i: its block, or NULL when it held none. */
static page_t *slot_take(heap_t *h, int i)
{
	for (;;) {
		page_t *pg = slot_load(h, i);
		if (!pg) return NULL;
		if (atomic_compare_exchange_strong(&h->lcache[i], &pg, NULL)) return pg;
	}
}

/* Give back all of h's blocks to the runs; whether it held any. Any thread may call it for any
 * heap. */
bool large_cache_flush(heap_t *h)
{
	bool any = false;
	for (int i = 0; i < LCACHE_N; i++) {
		page_t *pg = slot_take(h, i);
		if (pg) region_free(pg);
		any |= pg != NULL;
	}
	return any;
}

/* The purger's decay for h (heap_decay, under heaps_lock): the pages of the blocks that waited
 * purge_ms go back to the OS. Returns when to look again (UINT64_MAX: nothing left to purge, and
 * the next put asks again). */
uint64_t large_cache_decay(heap_t *h, uint64_t now)
{
	if (!atomic_load_explicit(&h->lcache_due, memory_order_relaxed)) return UINT64_MAX;
	/* cleared before the slots are looked at, as large_cache_put fills a slot before it looks
	 * at the flag: one of the two sees the other's store, so no block waits unseen */
	atomic_store(&h->lcache_due, 0);
	uint64_t next = UINT64_MAX;
	for (int i = 0; i < LCACHE_N; i++) {
		page_t *pg = atomic_load(&h->lcache[i]);
		if (!pg || purged(pg)) continue;
		uint64_t due = atomic_load_explicit(&h->lcache_ms[i], memory_order_relaxed) + G.cfg.purge_ms;
		if (due > now) {
			if (due < next) next = due;
			continue;
		}
		if (!atomic_compare_exchange_strong(&h->lcache[i], &pg, BUSY)) continue;  /* taken */
		region_purge_block(pg);
		atomic_store_explicit(&h->lcache[i], pg, memory_order_release);
	}
	if (next != UINT64_MAX) atomic_store(&h->lcache_due, 1);
	return next;
}

/* The most pages a block may have for a malloc of n bytes, np pages: a quarter of n to spare past
 * the pages n needs. */
static size_t most_for(size_t n, size_t np)
{
	size_t most = (n + n / 4) >> PAGE_SHIFT;
	return most < np ? np : most;
}

/* Whether a block of np pages would have served one of h's last LCACHE_N large mallocs. */
static bool wanted(const heap_t *h, size_t np)
{
	for (int i = 0; i < LCACHE_N; i++)
		if (np >= h->lcache_req[i] && np <= h->lcache_most[i]) return true;
	return false;
}

/* free(p) of pg's large block, p its start: true when this thread's cache took it. */
bool large_cache_put(page_t *pg, const void *p, const char *func)
{
	heap_t *h = heap_tls;
	if (h == &heap_none || G.slow_only || pg->npages > LCACHE_PAGES || (pg->flags & PF_PROT) ||
	    range_as_limit())
		return false;
	/* a block no recent malloc would have taken only holds memory the runs would give the next
	 * one: cached only when its size came lately (sizes that come again) */
	if (!wanted(h, pg->npages)) return false;
	uint64_t asked = __atomic_load_n(&pg->asked, __ATOMIC_RELAXED);
	if (asked == ASKED_CACHED ||
	    !__atomic_compare_exchange_n(&pg->asked, &asked, ASKED_CACHED, false, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_RELAXED))
		fatal_pointer(func, p);
	if (!G.cfg.purge_ms) region_purge_block(pg);          /* freed pages go back at once */
	/* an empty slot, else the one of the oldest free, whose block goes back to the runs */
	int k = 0;
	for (int i = 0; i < LCACHE_N; i++) {
		if (!atomic_load_explicit(&h->lcache[i], memory_order_relaxed)) { k = i; break; }
		if (h->lcache_seq[i] < h->lcache_seq[k]) k = i;
	}
	page_t *old = slot_take(h, k);
	if (old) region_free(old);
	uint64_t now = os_now_ms();
	h->lcache_seq[k] = ++h->lcache_puts;
	atomic_store_explicit(&h->lcache_ms[k], now, memory_order_relaxed);
	atomic_store(&h->lcache[k], pg);
	/* its pages go back if it waits purge_ms: ask the purger once, until its decay finds none */
	if (G.cfg.purge_ms && !atomic_exchange(&h->lcache_due, 1) && region_decay_ok())
		region_decay_at(now + G.cfg.purge_ms);
	return true;
}

/* A cached block for a malloc of n bytes, np pages (at most LCACHE_PAGES): the smallest that
 * fits, with no more than a quarter of n to spare past the pages n needs, out of its slot and its
 * pages committed; or NULL. */
page_t *large_cache_take(size_t n, size_t np)
{
	/* a thread that makes large blocks gets a heap for their cache, if it has none yet (a thread
	 * that only frees them, a consumer, goes on giving them to the runs) */
	heap_t *h = heap_of_thread();
	if (!h) return NULL;
	int k = -1;
	size_t best = SIZE_MAX, most = most_for(n, np);
	unsigned r = h->lcache_reqs++ % LCACHE_N;
	h->lcache_req[r] = (uint32_t)np;
	h->lcache_most[r] = (uint32_t)most;
	for (int i = 0; i < LCACHE_N; i++) {
		page_t *pg = slot_load(h, i);
		if (pg && pg->npages >= np && pg->npages <= most && pg->npages < best) { best = pg->npages; k = i; }
	}
	if (k < 0) return NULL;
	/* the block the loop saw (only this thread puts), or none: collect_all took it meanwhile */
	page_t *pg = slot_take(h, k);
	if (!pg) return NULL;
	if (pg->flags & PF_PROT) {
		/* a caller's mprotect or lasting madvise reached its pages while it was free: the
		 * runs map over them (free_locked), and the malloc takes a block of theirs */
		region_free(pg);
		return NULL;
	}
	if (purged(pg) && !region_recommit_block(pg)) {
		region_free(pg);
		return NULL;
	}
	h->n_lc_reused++;
	return pg;
}

/* What h's cache holds, for the statistics (under heaps_lock, heap.c): blocks and bytes. */
void large_cache_count(heap_t *h, size_t *blocks, size_t *bytes)
{
	for (int i = 0; i < LCACHE_N; i++) {
		const page_t *pg = atomic_load_explicit(&h->lcache[i], memory_order_acquire);
		if (!pg) continue;
		++*blocks;
		*bytes += (size_t)pg->npages << PAGE_SHIFT;
	}
}
