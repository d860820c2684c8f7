/* test-region.c - runs of pages: allocation inside the range, coalescing, resizing in place,
 * committed accounting, purging and the limit. */
#include "region.h"
#include "region_int.h"
#include "range.h"
#include "init.h"
#include "alloc.h"
#include "suites.h"
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t committed(void)
{
	contig_stats_t st;
	st.size = sizeof st;
	ck_assert_int_eq(contig_get_stats(&st), 0);
	return st.committed;
}

START_TEST(runs_in_range_and_disjoint)
{
	contig_ensure_init();
	page_t *a = region_alloc(3, PK_LARGE, 0), *b = region_alloc(5, PK_LARGE, 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	uintptr_t pa = page_addr(page_idx(a)), pb = page_addr(page_idx(b));
	ck_assert(range_has((void *)pa) && range_has((void *)(pb + 5 * PAGE_SIZE - 1)));
	ck_assert(pa + 3 * PAGE_SIZE <= pb || pb + 5 * PAGE_SIZE <= pa);
	memset((void *)pa, 1, 3 * PAGE_SIZE);
	memset((void *)pb, 2, 5 * PAGE_SIZE);
	ck_assert_int_eq(page_of((void *)(pb + 4 * PAGE_SIZE))->kind, PK_CONT);
	region_free(a);
	region_free(b);
}
END_TEST

START_TEST(coalescing_reuses_the_hole)
{
	contig_ensure_init();
	page_t *r[3];
	for (int i = 0; i < 3; i++) r[i] = region_alloc(4, PK_LARGE, 0);
	page_t *fence = region_alloc(1, PK_LARGE, 0);
	size_t first = page_idx(r[0]);
	ck_assert_uint_eq(page_idx(r[1]), first + 4);
	ck_assert_uint_eq(page_idx(r[2]), first + 8);
	region_free(r[1]);
	region_free(r[0]);
	region_free(r[2]);
	/* the three runs merged: a 12-page request fits exactly where they were */
	page_t *big = region_alloc(12, PK_LARGE, 0);
	ck_assert_uint_eq(page_idx(big), first);
	region_free(big);
	region_free(fence);
}
END_TEST

/* Freed pages are used again before fresh ones: a run freed a moment ago (dirty, not purged yet)
 * serves the next requests that fit it even when fresh runs would fit them as well, so committed
 * memory does not grow; a served mapping, which must read as zero, takes fresh pages first.
 * Recycled runs merge with recycled runs, purged or not, and purging moves nothing: where the
 * next block goes does not depend on whether the purger ran (SPEC, Determinism). */
START_TEST(dirty_runs_first)
{
	contig_ensure_init();
	uint32_t ms = G.cfg.purge_ms;
	G.cfg.purge_ms = 60000;                     /* nothing is purged behind the test's back */
	region_purge(true);                         /* every free run clean */
	page_t *a = region_alloc(6, PK_LARGE, 0);
	page_t *fence = region_alloc(1, PK_LARGE, 0);
	size_t ia = page_idx(a);
	memset((void *)page_addr(ia), 3, 6 * PAGE_SIZE);
	region_free(a);                             /* the one dirty run: [ia, ia + 6) */
	size_t before = committed();
	page_t *b = region_alloc(2, PK_LARGE, 0);
	ck_assert_uint_eq(page_idx(b), ia);
	page_t *c = region_alloc(4, PK_LARGE, 0);
	ck_assert_uint_eq(page_idx(c), ia + 2);
	ck_assert_uint_eq(committed(), before);     /* no page committed for either */
	page_t *m = region_alloc(2, PK_MMAP, RUN_ZERO);
	ck_assert_uint_ne(page_idx(m), ia);
	region_free(m);
	region_free(c);
	/* b's pages are still live; c's dirty run sits between them and fence */
	region_purge(true);                         /* c's run purged: recycled still, where it was */
	ck_assert_int_eq(page_of((void *)page_addr(ia + 2))->kind, PK_FREE);
	ck_assert_uint_eq(page_of((void *)page_addr(ia + 2))->npages, 4);
	region_free(b);                             /* recycled too: the two merge */
	ck_assert_int_eq(page_of((void *)page_addr(ia))->kind, PK_FREE);
	ck_assert_uint_eq(page_of((void *)page_addr(ia))->npages, 6);
	/* the same fit whether the purger ran in between or not */
	page_t *d = region_alloc(3, PK_LARGE, 0);
	ck_assert_uint_eq(page_idx(d), ia);
	region_free(d);
	region_purge(true);
	d = region_alloc(3, PK_LARGE, 0);
	ck_assert_uint_eq(page_idx(d), ia);
	region_free(d);
	region_free(fence);
	region_purge(true);
	G.cfg.purge_ms = ms;
}
END_TEST

START_TEST(resize_in_place)
{
	contig_ensure_init();
	page_t *a = region_alloc(2, PK_LARGE, 0);
	size_t idx = page_idx(a);
	ck_assert_int_eq(region_resize(a, 6, 0), 0);
	ck_assert_uint_eq(a->npages, 6);
	memset((void *)page_addr(idx), 7, 6 * PAGE_SIZE);
	ck_assert_int_eq(region_resize(a, 1, 0), 0);
	page_t *b = region_alloc(5, PK_LARGE, 0);
	ck_assert_uint_eq(page_idx(b), idx + 1);         /* the tail went back and is reused */
	ck_assert_int_ne(region_resize(a, 2, 0), 0);        /* now blocked by b */
	region_free(a);
	region_free(b);
}
END_TEST

START_TEST(zeroed_runs_read_zero)
{
	contig_ensure_init();
	page_t *a = region_alloc(8, PK_LARGE, 0);
	size_t idx = page_idx(a);
	memset((void *)page_addr(idx), 0x5a, 8 * PAGE_SIZE);
	region_free(a);
	page_t *b = region_alloc(8, PK_LARGE, RUN_ZERO);
	const unsigned char *p = (const unsigned char *)page_addr(page_idx(b));
	size_t i = 0;
	while (i < 8 * PAGE_SIZE && p[i] == 0) i++;      /* one assertion, not half a million: the
	                                                    per-byte one ran into the timeout on a
	                                                    loaded machine */
	ck_assert_uint_eq(i, 8 * PAGE_SIZE);
	region_free(b);
}
END_TEST

START_TEST(purge_returns_committed)
{
	contig_ensure_init();
	size_t before = committed();
	page_t *a = region_alloc(64, PK_LARGE, 0);
	memset((void *)page_addr(page_idx(a)), 1, 64 * PAGE_SIZE);
	ck_assert_uint_ge(committed(), before + 64 * PAGE_SIZE);
	region_free(a);
	ck_assert_uint_ge(region_purge(true), 64 * PAGE_SIZE);
	ck_assert_uint_le(committed(), before);
}
END_TEST

START_TEST(limit_refuses_and_recovers)
{
	contig_ensure_init();
	region_purge(true);
	size_t base = committed() >> PAGE_SHIFT;
	region_set_limit_pages(base + 16);
	page_t *a = region_alloc(10, PK_LARGE, 0);
	ck_assert_ptr_nonnull(a);
	errno = 0;
	ck_assert_ptr_null(region_alloc(10, PK_LARGE, 0));
	ck_assert_int_eq(errno, ENOMEM);
	region_free(a);
	page_t *b = region_alloc(10, PK_LARGE, 0);      /* the freed pages are purged to make room */
	ck_assert_ptr_nonnull(b);
	region_free(b);
	region_set_limit_pages(0);
}
END_TEST

/* A PROT_NONE reservation (RUN_RESERVE) is not committed and passes a limit; its pages count as
 * they are made accessible (region_mmap_commit, which the limit can refuse), stop counting when
 * a fixed PROT_NONE mapping covers them (region_mmap_uncommit), a growth in place adds none, and
 * giving it back leaves committed where it was. */
START_TEST(reservation_not_committed)
{
	contig_ensure_init();
	region_purge(true);
	size_t base = committed() >> PAGE_SHIFT;
	region_set_limit_pages(base + 4);
	page_t *h = region_alloc(64, PK_MMAP, RUN_ZERO | RUN_RESERVE);
	ck_assert_ptr_nonnull(h);
	size_t idx = page_idx(h);
	ck_assert_uint_eq(committed() >> PAGE_SHIFT, base);
	ck_assert_int_eq(region_mmap_commit(idx, idx + 3), 0);
	ck_assert_uint_eq(committed() >> PAGE_SHIFT, base + 3);
	ck_assert_int_eq(region_mmap_commit(idx, idx + 3), 0);         /* committed already: no more */
	ck_assert_uint_eq(committed() >> PAGE_SHIFT, base + 3);
	ck_assert_int_ne(region_mmap_commit(idx + 3, idx + 5), 0);     /* 5 pages past a limit of 4 */
	ck_assert_uint_eq(committed() >> PAGE_SHIFT, base + 3);
	region_mmap_uncommit(idx, idx + 2);
	ck_assert_uint_eq(committed() >> PAGE_SHIFT, base + 1);
	ck_assert_int_eq(region_mmap_commit(idx + 3, idx + 5), 0);
	ck_assert_uint_eq(committed() >> PAGE_SHIFT, base + 3);
	if (region_resize(h, 96, RUN_RESERVE) == 0) ck_assert_uint_eq(h->npages, 96);
	ck_assert_uint_eq(committed() >> PAGE_SHIFT, base + 3);
	region_mmap_release(h, idx, idx + h->npages);
	ck_assert_uint_eq(committed() >> PAGE_SHIFT, base);
	region_set_limit_pages(0);
}
END_TEST

/* A thread freeing a block of another thread's run sets the block's freed bit and then ors
 * its word's bit into the run's pending word; in between, the owner may take the free, empty
 * the run and give it back. That late or must land harmlessly: the chunk of a given-back run
 * is on the unused list, and that list's link is not the pending word (it was, and the or
 * sent the next run's metadata through a bad pointer). */
START_TEST(late_remote_or_into_unused_chunk)
{
	page_t *a = region_alloc(1, PK_SMALL, 0), *b = region_alloc(1, PK_SMALL, 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(class_pages[1], 1);
	a->cls = b->cls = 1;                             /* one-page runs (as heap.c sets them) */
	remote_t *ra = page_remote(a), *rb = page_remote(b);
	region_free(b);
	region_free(a);                                  /* a's chunk first on the list, then b's */
	atomic_fetch_or(&ra->pending, 1ull << 3);      /* word 3, 5: bits a chunk address never has */
	atomic_fetch_or(&rb->pending, 1ull << 5);
	page_t *c = region_alloc(1, PK_SMALL, 0), *d = region_alloc(1, PK_SMALL, 0);
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(d);
	c->cls = d->cls = 1;
	ck_assert_ptr_eq(page_remote(c), ra);            /* the chunks came back, in order */
	ck_assert_ptr_eq(page_remote(d), rb);
	for (unsigned w = 0; w < LIVE_BITS / 64; w++) {  /* and clean */
		ck_assert_uint_eq(page_live(c)[w], 0);
		ck_assert_uint_eq(atomic_load(&page_freed(d)[w]), 0);
	}
	region_free(c);
	region_free(d);
}
END_TEST

/* Only a small run's head has a capacity: free's fast path tests nothing else before it uses
 * the descriptor, so a run given back must not leave one behind (a free into the pages later
 * would be taken for a free of a small block). */
START_TEST(given_back_small_run_has_no_capacity)
{
	page_t *a = region_alloc(1, PK_SMALL, 0);
	ck_assert_ptr_nonnull(a);
	a->cls = 1;
	a->capacity = 100;
	region_free(a);
	ck_assert_uint_eq(a->kind, PK_FREE);
	ck_assert_uint_eq(a->capacity, 0);
}
END_TEST

/* OS pages of [a, a + len) resident now. */
static size_t resident_pages(uintptr_t a, size_t len)
{
	static unsigned char vec[HUGE_SIZE / 4096];
	size_t n = len / (size_t)sysconf(_SC_PAGESIZE), k = 0;
	ck_assert_int_eq(mincore((void *)a, len, vec), 0);
	for (size_t i = 0; i < n; i++) k += vec[i] & 1;
	return k;
}

/* huge.c: once AHEAD_AFTER chunks were opened, each chunk opened cuts the next, which the purger
 * faults in (all of it resident before any run of it is taken); the next run past the open
 * chunk comes from exactly that chunk; malloc_trim's purge gives a chunk ahead back. */
START_TEST(chunk_ahead_faulted_in_then_taken)
{
	contig_ensure_init();
	if (!region_huge_ok()) return;          /* no THP here: no chunks, nothing ahead */
	enum { MAXRUNS = HUGE_PAGES * (AHEAD_AFTER + 4) };
	static page_t *runs[MAXRUNS];
	size_t n = 0;
	range_lock();
	bool seen = R.filling || R.ahead;
	range_unlock();
	while (!seen && n < MAXRUNS) {
		runs[n] = region_alloc_run(true, 0);
		ck_assert_ptr_nonnull(runs[n]);
		n++;
		range_lock();
		seen = R.filling || R.ahead;
		range_unlock();
	}
	ck_assert_msg(seen, "no chunk cut ahead after %zu runs", n);
	ck_assert_uint_ge(n, (size_t)(AHEAD_AFTER - 1) * HUGE_PAGES);
	range_lock();
	page_t *ahead = R.filling ? R.filling : R.ahead;
	range_unlock();
	uintptr_t a = page_addr(page_idx(ahead));
	ck_assert_uint_eq(a & (HUGE_SIZE - 1), 0);
	/* the purger faults it in: wait for it (5 s at most) */
	for (int i = 0; i < 5000; i++) {
		range_lock();
		bool ready = R.ahead == ahead;
		range_unlock();
		if (ready) break;
		usleep(1000);
	}
	range_lock();
	ck_assert_ptr_eq(R.ahead, ahead);
	ck_assert_ptr_null(R.filling);
	range_unlock();
	ck_assert_uint_eq(resident_pages(a, HUGE_SIZE), HUGE_SIZE / (size_t)sysconf(_SC_PAGESIZE));
	/* the rest of the open chunk, then the next run: the chunk ahead's first */
	for (;;) {
		range_lock();
		unsigned left = R.nhuge;
		range_unlock();
		if (!left) break;
		ck_assert_uint_lt(n, MAXRUNS);
		runs[n++] = region_alloc_run(true, 0);
	}
	ck_assert_uint_lt(n, MAXRUNS);
	runs[n] = region_alloc_run(true, 0);
	ck_assert_ptr_eq(runs[n], ahead);
	n++;
	/* which cut the next one ahead; a purge of everything gives it back */
	range_lock();
	page_t *next = R.filling ? R.filling : R.ahead;
	range_unlock();
	ck_assert_ptr_nonnull(next);
	ck_assert_ptr_ne(next, ahead);
	uintptr_t b = page_addr(page_idx(next));
	region_purge(true);
	range_lock();
	ck_assert_ptr_null(R.ahead);
	ck_assert_ptr_null(R.filling);
	ck_assert_uint_eq(R.nhuge, 0);
	range_unlock();
	ck_assert_uint_eq(P(page_idx(next))->kind, PK_FREE);
	ck_assert_uint_eq(resident_pages(b, HUGE_SIZE), 0);
	for (size_t i = 0; i < n; i++) region_free(runs[i]);
	region_purge(true);
}
END_TEST

/* Under CONTIG_LIMIT nothing is cut ahead: committed pages ahead of need would count. */
START_TEST(no_chunk_ahead_under_a_limit)
{
	contig_ensure_init();
	if (!region_huge_ok()) return;
	region_set_limit_pages((size_t)1 << 30);
	enum { MAXRUNS = HUGE_PAGES * (AHEAD_AFTER + 2) };
	static page_t *runs[MAXRUNS];
	for (size_t i = 0; i < MAXRUNS; i++) {
		runs[i] = region_alloc_run(true, 0);
		ck_assert_ptr_nonnull(runs[i]);
	}
	range_lock();
	ck_assert_ptr_null(R.filling);
	ck_assert_ptr_null(R.ahead);
	range_unlock();
	for (size_t i = 0; i < MAXRUNS; i++) region_free(runs[i]);
	region_set_limit_pages(0);
	region_purge(true);
}
END_TEST

/* malloc_trim's purge gives the open chunk's untaken runs back; that must not leave the purger's
 * start claimed with no purger running (it did: no purger ever started again, and freed pages went
 * back only at the library's later calls). A freed block's pages go back with no further call. */
START_TEST(purge_leaves_the_purger_startable)
{
	contig_ensure_init();
	if (!region_huge_ok()) return;
	page_t *r = region_alloc_run(true, 0);          /* opens a chunk: 31 runs wait */
	ck_assert_ptr_nonnull(r);
	region_purge(true);
	size_t before = committed();
	page_t *a = region_alloc(64, PK_LARGE, 0);
	ck_assert_ptr_nonnull(a);
	memset((void *)page_addr(page_idx(a)), 1, 64 * PAGE_SIZE);
	region_free(a);
	int waited = 0;
	while (committed() > before && waited < 3000) {
		usleep(10000);
		waited += 10;
	}
	ck_assert_msg(committed() <= before, "freed pages still committed after %d ms", waited);
	region_free(r);
}
END_TEST

Suite *region_suite(void)
{
	Suite *s = suite_create("region");
	TCase *t = tcase_create("runs");
	tcase_add_test(t, runs_in_range_and_disjoint);
	tcase_add_test(t, coalescing_reuses_the_hole);
	tcase_add_test(t, dirty_runs_first);
	tcase_add_test(t, resize_in_place);
	tcase_add_test(t, zeroed_runs_read_zero);
	tcase_add_test(t, purge_returns_committed);
	tcase_add_test(t, limit_refuses_and_recovers);
	tcase_add_test(t, reservation_not_committed);
	tcase_add_test(t, late_remote_or_into_unused_chunk);
	tcase_add_test(t, given_back_small_run_has_no_capacity);
	tcase_add_test(t, chunk_ahead_faulted_in_then_taken);
	tcase_add_test(t, no_chunk_ahead_under_a_limit);
	tcase_add_test(t, purge_leaves_the_purger_startable);
	suite_add_tcase(s, t);
	return s;
}
