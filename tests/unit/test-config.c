/* test-config.c - CONTIG_* parsing: good values, bad values and what is used instead. */
#include "common.h"
#include "suites.h"

START_TEST(sizes)
{
	size_t s;
	ck_assert_int_eq(config_parse_size("64G", &s), 0);
	ck_assert_uint_eq(s, (size_t)64 << 30);
	ck_assert_int_eq(config_parse_size("512m", &s), 0);
	ck_assert_uint_eq(s, (size_t)512 << 20);
	ck_assert_int_eq(config_parse_size("1T", &s), 0);
	ck_assert_uint_eq(s, (size_t)1 << 40);
	ck_assert_int_eq(config_parse_size("4096", &s), 0);
	ck_assert_uint_eq(s, 4096);
	ck_assert_int_eq(config_parse_size("16KiB", &s), 0);
	ck_assert_uint_eq(s, 16384);
	ck_assert_int_eq(config_parse_size("12Q", &s), -1);
	ck_assert_int_eq(config_parse_size("", &s), -1);
	ck_assert_int_eq(config_parse_size("-5", &s), -1);
	ck_assert_int_eq(config_parse_size("G", &s), -1);
	ck_assert_int_eq(config_parse_size("99999999999999999999", &s), -1);
	ck_assert_int_eq(config_parse_size("17179869184T", &s), -1);
}
END_TEST

START_TEST(addresses)
{
	uintptr_t a;
	ck_assert_int_eq(config_parse_addr("0xf800000000", &a), 0);
	ck_assert_uint_eq(a, 0xf800000000);
	ck_assert_int_eq(config_parse_addr("1065151889408", &a), 0);
	ck_assert_uint_eq(a, 0xf800000000);
	ck_assert_int_eq(config_parse_addr("zzz", &a), -1);
	ck_assert_int_eq(config_parse_addr("0x", &a), -1);
	ck_assert_int_eq(config_parse_addr("0x12g", &a), -1);
}
END_TEST

static config_t parse(const char *a, const char *b)
{
	char *env[3] = { (char *)a, (char *)b, NULL };
	config_t c;
	config_defaults(&c);
	config_parse(&c, env);
	return c;
}

START_TEST(defaults)
{
	config_t c = parse(NULL, NULL);
	ck_assert_uint_eq(c.base, 0xf800000000);
	ck_assert_uint_eq(c.size, (size_t)64 << 30);
	ck_assert_int_eq(c.mode, MODE_AUTO);
	ck_assert_int_eq(c.on_collision, COLL_SKIP);
	ck_assert_int_eq(c.mmap, MMAP_RW);
	ck_assert_uint_le(c.purge_ms, 1000);
}
END_TEST

START_TEST(bad_values_fall_back)
{
	config_t c = parse("CONTIG_SIZE=12Q", "CONTIG_BASE=zzz");
	ck_assert_uint_eq(c.size, (size_t)64 << 30);
	ck_assert_uint_eq(c.base, 0xf800000000);
	c = parse("CONTIG_BASE=0xffff800000000000", "CONTIG_MODE=bogus");
	ck_assert_uint_eq(c.base, 0xf800000000);
	ck_assert_int_eq(c.mode, MODE_AUTO);
	c = parse("CONTIG_LIMIT=-5", "CONTIG_PURGE_MS=soon");
	ck_assert_int_eq(c.limit_kind, LIMIT_NONE);
	ck_assert_uint_le(c.purge_ms, 1000);
}
END_TEST

START_TEST(good_values)
{
	config_t c = parse("CONTIG_BASE=0x200000000", "CONTIG_SIZE=1G");
	ck_assert_uint_eq(c.base, 0x200000000);
	ck_assert_uint_eq(c.size, (size_t)1 << 30);
	c = parse("CONTIG_MODE=lazy", "CONTIG_LIMIT=256M");
	ck_assert_int_eq(c.mode, MODE_LAZY);
	ck_assert_int_eq(c.limit_kind, LIMIT_SIZE);
	ck_assert_uint_eq(c.limit, (size_t)256 << 20);
	c = parse("CONTIG_LIMIT=cgroup", "CONTIG_ON_COLLISION=abort");
	ck_assert_int_eq(c.limit_kind, LIMIT_CGROUP);
	ck_assert_int_eq(c.on_collision, COLL_ABORT);
	c = parse("CONTIG_STATS=json", "CONTIG_LEAKS=error");
	ck_assert_int_eq(c.stats, STATS_JSON);
	ck_assert_int_eq(c.leaks, LEAKS_ERROR);
	c = parse("CONTIG_PURGE_MS=0", "CONTIG_MMAP=0");
	ck_assert_uint_eq(c.purge_ms, 0);
	ck_assert_int_eq(c.mmap, MMAP_NONE);
}
END_TEST

START_TEST(unaligned_base_rounds_up)
{
	config_t c = parse("CONTIG_BASE=0xf800001234", NULL);
	ck_assert_uint_eq(c.base, 0xf800010000);
}
END_TEST

START_TEST(range_beyond_user_space)
{
	/* a base whose range would leave user space is refused, the size kept */
	config_t c = parse("CONTIG_BASE=0x7ff000000000", "CONTIG_SIZE=1T");
	ck_assert_uint_eq(c.base, 0xf800000000);
	ck_assert_uint_eq(c.size, (size_t)1 << 40);
	/* a size past the largest supported range (64T) is cut to it, in one step */
	c = parse("CONTIG_SIZE=200T", NULL);
	ck_assert_uint_eq(c.base, 0xf800000000);
	ck_assert_uint_eq(c.size, (size_t)64 << 40);
	c = parse("CONTIG_SIZE=18446744073709551615", NULL);
	ck_assert_uint_eq(c.size, (size_t)64 << 40);
	/* the kernel never maps the last 4 KiB page below 2^47: a range ending at 2^47 is refused */
	c = parse("CONTIG_BASE=0x7fff00000000", "CONTIG_SIZE=4G");
	ck_assert_uint_eq(c.base, 0xf800000000);
	c = parse("CONTIG_BASE=0x7ffe00000000", "CONTIG_SIZE=4G");
	ck_assert_uint_eq(c.base, 0x7ffe00000000);
	ck_assert_uint_le(c.base + c.size, 0x7ffffffff000);
	c = parse("CONTIG_BASE=0x7ffffff00000", NULL);
	ck_assert_uint_eq(c.base, 0xf800000000);
}
END_TEST

START_TEST(words_ignore_spaces)
{
	/* choices take spaces around them as sizes and addresses do */
	config_t c = parse("CONTIG_MODE= lazy ", "CONTIG_VERBOSE= 0");
	ck_assert_int_eq(c.mode, MODE_LAZY);
	ck_assert_int_eq(c.verbose, 0);
	c = parse("CONTIG_STATS=json\t", NULL);
	ck_assert_int_eq(c.stats, STATS_JSON);
}
END_TEST

Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *t = tcase_create("parse");
	tcase_add_test(t, sizes);
	tcase_add_test(t, addresses);
	tcase_add_test(t, defaults);
	tcase_add_test(t, bad_values_fall_back);
	tcase_add_test(t, good_values);
	tcase_add_test(t, words_ignore_spaces);
	tcase_add_test(t, unaligned_base_rounds_up);
	tcase_add_test(t, range_beyond_user_space);
	suite_add_tcase(s, t);
	return s;
}
