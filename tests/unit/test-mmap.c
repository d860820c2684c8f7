/* test-mmap.c - anonymous mappings served from the range: zeroed, partial unmaps, growth in
 * place, fixed mappings over free pages honoured and over heap blocks refused. */
#include "mmap.h"
#include "alloc.h"
#include "region.h"
#include "region_int.h"
#include "init.h"
#include "heap.h"
#include "suites.h"
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static void *anon(size_t n)
{
	return mm_mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

START_TEST(served_zeroed_in_range)
{
	for (int round = 0; round < 3; round++) {
		unsigned char *p = anon(1 << 20);
		ck_assert_ptr_ne(p, MAP_FAILED);
		ck_assert(range_has(p));
		for (size_t i = 0; i < (1 << 20); i += 512) ck_assert_uint_eq(p[i], 0);
		memset(p, 0xee, 1 << 20);
		ck_assert_int_eq(mm_munmap(p, 1 << 20), 0);
	}
}
END_TEST

START_TEST(partial_unmaps)
{
	size_t n = 8 * PAGE_SIZE;
	char *p = anon(n);
	memset(p, 1, n);
	ck_assert_int_eq(mm_munmap(p, 2 * PAGE_SIZE), 0);                  /* prefix */
	ck_assert_int_eq(mm_munmap(p + 7 * PAGE_SIZE, PAGE_SIZE), 0);       /* suffix */
	ck_assert_int_eq(mm_munmap(p + 4 * PAGE_SIZE, 4096), 0);            /* a hole */
	for (size_t i = 2 * PAGE_SIZE; i < 4 * PAGE_SIZE; i++) ck_assert_int_eq(p[i], 1);
	ck_assert_int_eq(mm_munmap(p + 2 * PAGE_SIZE, 5 * PAGE_SIZE), 0);   /* the rest */
	/* the first pages went back to the heap: a new mapping may reuse them */
	char *q = anon(2 * PAGE_SIZE);
	ck_assert(range_has(q));
	ck_assert_int_eq(q[0], 0);
	mm_munmap(q, 2 * PAGE_SIZE);
}
END_TEST

START_TEST(mremap_grows)
{
	char *p = anon(PAGE_SIZE);
	memset(p, 9, PAGE_SIZE);
	char *q = mm_mremap(p, PAGE_SIZE, 4 * PAGE_SIZE, MREMAP_MAYMOVE, NULL);
	ck_assert_ptr_ne(q, MAP_FAILED);
	ck_assert(range_has(q));
	ck_assert_int_eq(q[PAGE_SIZE - 1], 9);
	ck_assert_int_eq(q[3 * PAGE_SIZE], 0);
	q = mm_mremap(q, 4 * PAGE_SIZE, PAGE_SIZE, 0, NULL);
	ck_assert_int_eq(q[0], 9);
	mm_munmap(q, PAGE_SIZE);
}
END_TEST

START_TEST(fixed_over_heap_refused)
{
	char *blk = alloc_malloc(1 << 20);
	memset(blk, 4, 1 << 20);
	errno = 0;
	void *r = mm_mmap(blk, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ck_assert_ptr_eq(r, MAP_FAILED);
	ck_assert_int_eq(errno, EEXIST);
	r = mm_mmap(blk, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ck_assert_ptr_eq(r, MAP_FAILED);
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_int_eq(mm_munmap(blk, 4096), -1);
	ck_assert_int_eq(blk[0], 4);
	contig_stats_t st;
	st.size = sizeof st;
	contig_get_stats(&st);
	ck_assert_uint_ge(st.collisions, 2);
	alloc_free(blk);
}
END_TEST

START_TEST(fixed_over_free_honoured)
{
	/* a free page run: allocate, then free it */
	char *blk = alloc_malloc(4 << 20);
	alloc_free(blk);
	char *r = mm_mmap(blk + PAGE_SIZE, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ck_assert_ptr_eq(r, blk + PAGE_SIZE);
	r[0] = 1;
	/* the heap never hands those pages out while they are the caller's */
	for (int i = 0; i < 64; i++) {
		char *b = alloc_malloc(200000);
		ck_assert(b + 200000 <= r || b >= r + PAGE_SIZE);
	}
	ck_assert_int_eq(mm_munmap(r, 8192), 0);
}
END_TEST

/* A fixed mapping over many free pages, unmapped in parts: a page is the caller's until all its
 * 4 KiB pages are unmapped, and then free again, merged with the free pages beside it. */
START_TEST(fixed_pages_given_back_whole)
{
	char *blk = alloc_malloc(32 * PAGE_SIZE);
	alloc_free(blk);
	char *f = blk + 4 * PAGE_SIZE;
	size_t fa = ((uintptr_t)f - G.base) >> PAGE_SHIFT;
	ck_assert_ptr_eq(mm_mmap(f, 16 * PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), f);
	memset(f, 3, 16 * PAGE_SIZE);
	page_t *h;
	ck_assert_int_eq(mm_munmap(f, 6 * PAGE_SIZE + 4096), 0);     /* 6 pages whole, one in part */
	for (size_t i = fa; i < fa + 6; i++) ck_assert_int_eq(region_classify(i, &h), PC_FREE);
	for (size_t i = fa + 6; i < fa + 16; i++) ck_assert_int_eq(region_classify(i, &h), PC_FIXED);
	ck_assert_int_eq(f[6 * PAGE_SIZE + 4096], 3);
	ck_assert_int_eq(mm_munmap(f + 6 * PAGE_SIZE + 4096, 10 * PAGE_SIZE - 4096), 0);
	range_lock();
	size_t s = free_run_holding(fa);
	ck_assert_uint_ne(s, SIZE_MAX);
	ck_assert_uint_ge(s + G.pages[s].npages, fa + 16);              /* one free run again */
	ck_assert_uint_eq(free_run_holding(fa + 15), s);
	range_unlock();
}
END_TEST

/* What a page is for the mapping calls, found the slow way: every free run walked for every
 * page that may be in one (region_classify skips the walk for pages of large blocks and served
 * mappings). */
static int classify_by_walk(size_t i)
{
	page_t *pg = &G.pages[i];
	if (pg->kind == PK_MMAP_FIXED) return PC_FIXED;
	if (pg->kind == PK_FOREIGN) return PC_FOREIGN;
	if (i >= range_frontier()) return PC_UNUSED;
	if ((pg->kind == PK_FREE || pg->kind == PK_CONT) && free_run_holding(i) != SIZE_MAX) return PC_FREE;
	page_t *h = pg->kind == PK_CONT ? pg - pg->head_off : pg;
	if (h->kind == PK_MMAP) return PC_MMAP;
	if (h->kind == PK_SMALL || h->kind == PK_LARGE) return PC_HEAP;
	return PC_FREE;
}

/* After large blocks of many sizes are made, freed, shrunk and grown in place, and mappings are
 * served and partly unmapped (free runs whose pages keep the head_off of the runs they were,
 * runs cut from where other runs were), every page of the range is what the walk says it is. */
#define CW_N 96
START_TEST(classify_agrees_with_the_walk)
{
	void *blk[CW_N];
	char *map[CW_N / 4];
	for (int i = 0; i < CW_N; i++) blk[i] = alloc_malloc(((size_t)(i % 11) + 3) * PAGE_SIZE - 100);
	for (int i = 0; i < CW_N / 4; i++) ck_assert_ptr_ne(map[i] = anon(((size_t)(i % 5) + 2) * PAGE_SIZE), MAP_FAILED);
	for (int i = 0; i < CW_N; i += 3) alloc_free(blk[i]);
	for (int i = 1; i < CW_N; i += 3) blk[i] = alloc_realloc(blk[i], 2 * PAGE_SIZE + 4096);   /* shrink */
	for (int i = 0; i < CW_N / 4; i += 2) mm_munmap(map[i] + PAGE_SIZE, PAGE_SIZE);          /* a middle page */
	for (int i = 0; i < CW_N; i += 3) blk[i] = alloc_malloc(((size_t)(i % 7) + 2) * PAGE_SIZE);
	for (int i = 2; i < CW_N; i += 3) blk[i] = alloc_realloc(blk[i], 20 * PAGE_SIZE);        /* grow */
	/* the freed blocks the thread's cache holds go back to the runs at the first classify of
	 * one of their pages (fixed_pages_given_back_whole): here, before the walk */
	heap_collect_all();
	range_lock();
	size_t end = range_frontier(), heap = 0, freep = 0, mine = 0;
	for (size_t i = 0; i < end; i++) {
		page_t *h, *h2;
		size_t next;
		int c = classify_by_walk(i);
		range_unlock();
		ck_assert_int_eq(region_classify(i, &h), c);
		/* the span it reports is all of that class, and of the same run */
		ck_assert_int_eq(region_classify_span(i, &h2, &next), c);
		ck_assert_ptr_eq(h2, h);
		ck_assert_uint_gt(next, i);
		range_lock();
		for (size_t k = i + 1; k < next && k < end; k++) {
			ck_assert_int_eq(classify_by_walk(k), c);
			if (c == PC_MMAP || c == PC_HEAP) ck_assert_ptr_eq(G.pages[k].kind == PK_CONT ? &G.pages[k] - G.pages[k].head_off : &G.pages[k], h);
		}
		heap += c == PC_HEAP;
		freep += c == PC_FREE;
		mine += c == PC_MMAP;
	}
	range_unlock();
	ck_assert_uint_gt(heap, 0);
	ck_assert_uint_gt(freep, 0);
	ck_assert_uint_gt(mine, 0);
	for (int i = 0; i < CW_N; i++) alloc_free(blk[i]);
	for (int i = 0; i < CW_N / 4; i++) {                    /* around the hole, if any */
		size_t n = ((size_t)(i % 5) + 2) * PAGE_SIZE;
		if (i % 2 == 0) {
			ck_assert_int_eq(mm_munmap(map[i], PAGE_SIZE), 0);
			if (n > 2 * PAGE_SIZE) ck_assert_int_eq(mm_munmap(map[i] + 2 * PAGE_SIZE, n - 2 * PAGE_SIZE), 0);
		} else
			ck_assert_int_eq(mm_munmap(map[i], n), 0);
	}
}
END_TEST

Suite *mmap_suite(void)
{
	Suite *s = suite_create("mmap");
	TCase *t = tcase_create("served");
	tcase_add_test(t, served_zeroed_in_range);
	tcase_add_test(t, partial_unmaps);
	tcase_add_test(t, mremap_grows);
	tcase_add_test(t, fixed_over_heap_refused);
	tcase_add_test(t, fixed_over_free_honoured);
	tcase_add_test(t, classify_agrees_with_the_walk);
	tcase_add_test(t, fixed_pages_given_back_whole);
	suite_add_tcase(s, t);
	return s;
}
