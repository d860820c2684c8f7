/* test-classes.c - size classes: every size maps to the smallest class that holds it, waste is
 * bounded, and runs hold enough blocks. */
#include "classes.h"
#include "suites.h"

/* The loops over every size test with plain C and call into Check only on a failure: each
 * ck_assert records its line through the runner's pipe, and 4 of them for each of the 131,072
 * sizes took 0.6 s idle, past Check's 4 s timeout on a loaded 2-core machine. */
START_TEST(smallest_class_that_fits)
{
	for (size_t n = 0; n <= SMALL_MAX; n++) {
		unsigned c = size_class(n);
		if (c < 1 || c >= NCLASS_MALLOC || class_size[c] < n || (c > 1 && class_size[c - 1] >= n))
			ck_abort_msg("size %zu: class %u is not the smallest that holds it", n, c);
	}
}
END_TEST

START_TEST(waste_bounded)
{
	/* above 128 bytes, at most 20% of a block is waste; below, the 16-byte quantum */
	for (size_t n = 1; n <= SMALL_MAX; n++) {
		size_t s = class_size[size_class(n)];
		if (n > 128 ? (s - n) * 5 > s : s - n >= 16)
			ck_abort_msg("size %zu: its class of %zu bytes wastes too much", n, s);
	}
}
END_TEST

START_TEST(header_classes)
{
	/* a power of two from 1 KiB to 8 KiB and a header of up to an eighth of it fits a block
	 * of 9/8 of it, not one of 5/4 */
	for (size_t p = 1024; p <= 8192; p *= 2)
		for (size_t n = p + 1; n <= p + p / 8; n++)
			if (class_size[size_class(n)] != p + p / 8)
				ck_abort_msg("size %zu: class of %zu bytes, not %zu", n,
				             (size_t)class_size[size_class(n)], p + p / 8);
	ck_assert_uint_eq(class_size[CLASS_16K], ONEPAGE_MAX);
	ck_assert_uint_eq(class_size[size_class(ONEPAGE_MAX + 1)], 20480);
	ck_assert_uint_eq(class_size[NCLASS_MALLOC - 1], SMALL_MAX);
}
END_TEST

START_TEST(classes_aligned_and_runs_hold_blocks)
{
	for (unsigned c = 1; c < NCLASS_MALLOC; c++) {
		ck_assert_uint_eq(class_size[c] % 16, 0);
		ck_assert_uint_gt(class_size[c], class_size[c - 1]);
		size_t run = (size_t)class_pages[c] << PAGE_SHIFT;
		ck_assert_uint_ge(run / class_size[c], 4);
		ck_assert_uint_le((run % class_size[c]) * 8, run);          /* at most 12.5% left over */
	}
}
END_TEST

/* Every coloured class whose size is a multiple of 128 (the ones an alignment of more than 64
 * picks: memalign) has an aligned twin: the same size, pages and blocks, never coloured; every
 * class past the malloc classes is the twin of exactly one. */
START_TEST(aligned_twins)
{
	unsigned seen[NCLASS] = { 0 };
	for (unsigned c = 1; c < NCLASS_MALLOC; c++) {
		unsigned t = class_twin[c];
		if (!class_coloured(c) || class_size[c] % 128 != 0) {
			ck_assert_uint_eq(t, 0);
			continue;
		}
		ck_assert_uint_ge(t, NCLASS_MALLOC);
		ck_assert_uint_lt(t, NCLASS);
		ck_assert(!class_coloured(t));
		ck_assert_uint_eq(class_size[t], class_size[c]);
		ck_assert_uint_eq(class_pages[t], class_pages[c]);
		ck_assert_uint_eq(class_blocks[t], class_blocks[c]);
		seen[t]++;
	}
	for (unsigned t = NCLASS_MALLOC; t < NCLASS; t++) ck_assert_uint_eq(seen[t], 1);
	for (size_t n = 0; n <= SMALL_MAX; n++)
		if (size_class(n) >= NCLASS_MALLOC) ck_abort_msg("size %zu has class %u, a twin", n, size_class(n));
}
END_TEST

/* memalign's fast way (alloc_memalign_fast): for an alignment of 32 or 64 bytes and any size up to
 * ONEPAGE_MAX, the size rounded up to the alignment (the alignment itself for 0) names a class
 * whose size is a multiple of the alignment, and the first such class at or above the size, the
 * one the slow way's search (alloc_memalign) picks. */
START_TEST(rounded_sizes_name_aligned_classes)
{
	for (size_t a = 32; a <= 64; a *= 2)
		for (size_t n = 0; n <= ONEPAGE_MAX; n++) {
			size_t m = n ? (n + a - 1) & ~(a - 1) : a;
			unsigned c = size_class(m);
			ck_assert_msg(class_size[c] % a == 0, "align %zu size %zu: class of %u bytes", a, n,
			              class_size[c]);
			unsigned first = size_class(n > a ? n : a);
			while (class_size[first] % a) first++;
			ck_assert_uint_eq(c, first);
		}
}
END_TEST

Suite *classes_suite(void)
{
	Suite *s = suite_create("classes");
	TCase *t = tcase_create("classes");
	tcase_add_test(t, smallest_class_that_fits);
	tcase_add_test(t, waste_bounded);
	tcase_add_test(t, header_classes);
	tcase_add_test(t, classes_aligned_and_runs_hold_blocks);
	tcase_add_test(t, aligned_twins);
	tcase_add_test(t, rounded_sizes_name_aligned_classes);
	suite_add_tcase(s, t);
	return s;
}
