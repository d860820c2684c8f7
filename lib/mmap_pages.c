/* mmap_pages.c - who owns each page a mapping call touches (free, beyond the frontier, a heap
 * block, a served mapping, a caller's fixed mapping, foreign), and the page side of served
 * mappings: giving unmapped pages back to the runs, taking free pages for a caller's MAP_FIXED.
 * The page layer's half of mmap.c; runs under the range lock. */
#include "region_int.h"
#include "os.h"

/* Whether PK_CONT page i belongs to the large block or served mapping its head_off names: such a
 * run writes the head_off of every page it takes (region_alloc, region_resize) and its npages
 * under this lock, so a page the run it names still covers is that run's. A page in a free run
 * keeps whatever head_off it had before; what it names is then a free run, or a run that no
 * longer reaches it. (A small run's length comes from its class, written after the cut,
 * outside this lock: its pages take the walk.) */
static bool cont_of_taken(size_t i, const page_t *h)
{
	return (h->kind == PK_LARGE || h->kind == PK_MMAP) && i < page_idx(h) + h->npages;
}

/* What page i is for a mapping call, and in *next the first page past the run that makes it so,
 * as far as one look tells (i + 1 when only page i is known): a caller walking a span of pages
 * goes on from there. */
static int classify_locked(size_t i, page_t **head, size_t *next)
{
	page_t *pg = P(i);
	*head = NULL;
	*next = i + 1;
	if (pg->kind == PK_MMAP_FIXED) return PC_FIXED;
	if (pg->kind == PK_FOREIGN) return PC_FOREIGN;
	if (i >= range_frontier()) return PC_UNUSED;
	page_t *h = page_run_head(pg);
	bool taken = pg->kind == PK_CONT && cont_of_taken(i, h);
	/* free pages are known only by walking the free runs (their middle pages keep stale
	 * kinds): not for a page of a large block or served mapping, which a mapping call over one
	 * meets on each of its pages (with 4,000 free runs, a MAP_FIXED of 256 pages over a served
	 * mapping and two mprotects of it took 6.6 ms when every page walked) */
	if (pg->kind == PK_FREE || (pg->kind == PK_CONT && !taken)) {
		size_t s = free_run_holding(i);
		if (s != SIZE_MAX) {
			*next = s + P(s)->npages;
			return PC_FREE;
		}
	}
	*head = h;
	if ((h == pg || taken) && (h->kind == PK_MMAP || h->kind == PK_LARGE)) *next = page_idx(h) + h->npages;
	if (h->kind == PK_MMAP) return PC_MMAP;
	if (h->kind == PK_LARGE && h->asked == ASKED_CACHED) return PC_CACHED;
	if (h->kind == PK_SMALL || h->kind == PK_LARGE) return PC_HEAP;
	return PC_FREE;
}

static bool (*cache_flush_fn)(void);    /* the heaps' (region_set_cache_flush) */
void region_set_cache_flush(bool (*fn)(void)) { cache_flush_fn = fn; }

/* A freed large block a thread's cache holds (large_cache.c) is free memory to a mapping call:
 * the caches go back to the runs (rare: a call over memory the program freed), and the page is
 * looked at again. Not under the range lock, which the purger's decay of a cache waits for while
 * the block is out of its slot. */
int region_classify_span(size_t i, page_t **head, size_t *next)
{
	for (int tries = 0;; tries++) {
		range_lock();
		int c = classify_locked(i, head, next);
		range_unlock();
		if (c != PC_CACHED) return c;
		/* a block the caches did not hold (between its free's claim and its slot) stays one */
		if (tries == 3 || !cache_flush_fn || !cache_flush_fn()) return PC_HEAP;
	}
}

int region_classify(size_t i, page_t **head)
{
	size_t next;
	return region_classify_span(i, head, &next);
}

/* Give pages [a, b) of served mapping h back to the heap: our mapping goes back over them, they
 * read as zero, and they join the free runs. What is left after b becomes a run of its own. */
void region_mmap_release(page_t *h, size_t a, size_t b)
{
	size_t idx = page_idx(h), end = idx + h->npages;
	range_lock();
	range_restore(a, b);
	if (b < end) {
		page_t *t = P(b);
		size_t cut = (b - idx) << PAGE_SHIFT;
		size_t lo = h->map_lo, hi = h->map_hi;
		t->kind = PK_MMAP;
		t->npages = (uint32_t)(end - b);
		t->head_off = 0;
		for (size_t i = b + 1; i < end; i++) P(i)->head_off = (uint32_t)(i - b);
		t->map_lo = lo > cut ? lo - cut : 0;
		t->map_hi = hi > cut ? hi - cut : 0;
		t->holes = NULL;                        /* runs with holes are released whole */
	}
	if (a > idx) {
		h->npages = (uint32_t)(a - idx);
		if (h->map_hi > ((a - idx) << PAGE_SHIFT)) h->map_hi = (a - idx) << PAGE_SHIFT;
	}
	for (size_t i = a; i < b; i++) {
		if (P(i)->flags & PF_DIRTY) R.committed--;
		P(i)->flags &= (uint8_t)~(PF_DIRTY | PF_PROT | PF_RESV);
	}
	R.mmap_bytes -= (b - a) << PAGE_SHIFT;
	P(a)->kind = PK_FREE;
	/* recycled (used since the range grew) with no dirty page: they merge with the freed blocks
	 * beside them, and the purge of such a run makes its PROT_NONE pages plain again */
	run_insert_free(a, b - a, CLEAN_STAMP, true);
	range_unlock();
}

/* Pages [a, b) become the caller's for a MAP_FIXED mapping: each must be free or beyond the
 * frontier (or the caller's fixed pages already). 0, or -1 when one is not. */
int region_fixed_take(size_t a, size_t b)
{
	page_t *hd;
	range_lock();
	for (size_t i = a, next; i < b; i = next) {
		int c = classify_locked(i, &hd, &next);
		if (c != PC_FREE && c != PC_UNUSED && c != PC_FIXED) { range_unlock(); return -1; }
	}
	for (size_t i = a; i < b;) {
		if (P(i)->kind == PK_MMAP_FIXED || i >= range_frontier()) {
			if (P(i)->kind != PK_MMAP_FIXED) { P(i)->kind = PK_MMAP_FIXED; P(i)->npages = 0; }
			i++;
			continue;
		}
		size_t s = free_run_holding(i);
		size_t e = s + P(s)->npages;
		bool dirty = P(s)->flags & PF_RUNDIRTY;
		uint32_t stamp = P(s)->stamp;
		size_t stop = e < b ? e : b;
		bin_remove(s);
		range_none_forget(i, stop);
		size_t d = SIZE_MAX;            /* first of the dirty pages in a row, decommitted together */
		for (size_t k = i; k < stop; k++) {
			if (P(k)->flags & PF_DIRTY) {
				R.committed--;
				if (d == SIZE_MAX) d = k;
			} else if (d != SIZE_MAX) {
				os_decommit(page_addr(d), (k - d) << PAGE_SHIFT);
				d = SIZE_MAX;
			}
			P(k)->flags &= (uint8_t)~(PF_DIRTY | PF_RUNDIRTY | PF_RESV);   /* PF_NONE: range_none_forget */
			P(k)->kind = PK_MMAP_FIXED;
			P(k)->npages = 0;
		}
		if (d != SIZE_MAX) os_decommit(page_addr(d), (stop - d) << PAGE_SHIFT);
		if (s < i) { P(s)->kind = PK_FREE; run_insert_free(s, i - s, stamp, dirty); }
		if (stop < e) { P(stop)->kind = PK_FREE; run_insert_free(stop, e - stop, stamp, dirty); }
		i = stop;
	}
	range_unlock();
	return 0;
}

/* The caller unmapped all of fixed pages [a, b): they are ours again, free below the frontier,
 * unused above it, with our mapping back over them in one call for each side. */
void region_fixed_give_back(size_t a, size_t b)
{
	range_lock();
	size_t f = range_frontier(), m = b < f ? b : (a > f ? a : f);
	if (a < m) {
		range_restore(a, m);
		for (size_t i = a; i < m; i++) {
			P(i)->kind = PK_FREE;
			P(i)->flags &= (uint8_t)~(PF_DIRTY | PF_PROT | PF_RESV);
		}
		run_insert_free(a, m - a, CLEAN_STAMP, true);   /* recycled, nothing dirty: as above */
	}
	if (m < b) {
		range_restore(m, b);
		for (size_t i = m; i < b; i++) P(i)->kind = PK_UNUSED;
	}
	range_unlock();
}

/* Pages [a, b) of served mappings are being made accessible (mprotect, or a fixed mapping of the
 * caller's over them): those of a reservation that were address space only (PF_RESV) count as
 * committed from now on, as the kernel charges a private mapping when it becomes writable. 0, or
 * -1 (limit_refused set) when the limit leaves no room for them even after purging. */
int region_mmap_commit(size_t a, size_t b)
{
	size_t n = 0;
	limit_refused = 0;
	range_lock();
	for (size_t i = a; i < b; i++) n += (P(i)->flags & PF_RESV) != 0;
	if (n && R.limit && R.committed + n > R.limit && !limit_make_room_locked(n)) {
		range_unlock();
		return -1;
	}
	for (size_t i = a; i < b; i++)
		if (P(i)->flags & PF_RESV) P(i)->flags = (uint8_t)((P(i)->flags & ~PF_RESV) | PF_DIRTY);
	R.committed += n;
	if (R.committed > R.committed_peak) R.committed_peak = R.committed;
	range_unlock();
	return 0;
}

/* A fixed PROT_NONE mapping of the caller's now covers each whole page of [a, b) of its served
 * mappings (a runtime giving back what it committed of a reservation): the kernel dropped what
 * those pages held, and they are address space only again. */
void region_mmap_uncommit(size_t a, size_t b)
{
	page_t *h;
	range_lock();
	for (size_t i = a, next; i < b;) {
		if (classify_locked(i, &h, &next) != PC_MMAP) { i = next; continue; }   /* past its run */
		if (P(i)->flags & PF_DIRTY) {
			P(i)->flags = (uint8_t)((P(i)->flags & ~PF_DIRTY) | PF_RESV);
			R.committed--;
		}
		i++;
	}
	range_unlock();
}
