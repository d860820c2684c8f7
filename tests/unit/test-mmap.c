/* test-mmap.c - anonymous mappings served from the range: zeroed, partial unmaps, growth in
 * place, fixed mappings over free pages honoured and over heap blocks refused. */
#include "mmap.h"
#include "alloc.h"
#include "region.h"
#include "init.h"
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

Suite *mmap_suite(void)
{
	Suite *s = suite_create("mmap");
	TCase *t = tcase_create("served");
	tcase_add_test(t, served_zeroed_in_range);
	tcase_add_test(t, partial_unmaps);
	tcase_add_test(t, mremap_grows);
	tcase_add_test(t, fixed_over_heap_refused);
	tcase_add_test(t, fixed_over_free_honoured);
	suite_add_tcase(s, t);
	return s;
}
