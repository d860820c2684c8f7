/* t-errors.c - glibc's error semantics: overflow and impossible sizes give NULL with ENOMEM,
 * bad alignments give EINVAL, malloc(0) is unique, free(NULL) is a no-op and free keeps errno.
 * Run under LD_PRELOAD. */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* volatile, so that the compiler cannot fold an impossible request into a constant NULL. */
static volatile size_t vmax = SIZE_MAX;
static volatile size_t vptrdiff = PTRDIFF_MAX;
static volatile size_t v4g = (size_t)1 << 32;

#define EXPECT_ENOMEM(expr) do { \
	void *r_; \
	errno = 0; \
	r_ = (expr); \
	CHECK(r_ == NULL, "%s returned %p, expected NULL", #expr, r_); \
	CHECK(errno == ENOMEM, "%s: errno %d (%s), expected ENOMEM", #expr, errno, strerror(errno)); \
} while (0)

static void check_fresh(void *p, size_t n, const char *what)
{
	CHECK(p != NULL, "%s returned NULL (errno %d)", what, errno);
	CHECK_RANGE(p, n ? n : 1, what);
	CHECK((uintptr_t)p % 16 == 0, "%s = %p is not 16-aligned", what, p);
	memset(p, 0x5a, n);
}

static void test_overflow(void)
{
	size_t half = vmax / 2;

	EXPECT_ENOMEM(calloc(half, 3));
	EXPECT_ENOMEM(calloc(3, half));
	EXPECT_ENOMEM(calloc(vmax, vmax));
	EXPECT_ENOMEM(calloc(v4g, v4g));        /* the product wraps to exactly 0 */
	EXPECT_ENOMEM(calloc(v4g + 1, v4g));    /* wraps to 4 GiB: a small product hides the overflow */
	EXPECT_ENOMEM(reallocarray(NULL, half, 3));
	EXPECT_ENOMEM(reallocarray(NULL, 3, half));
	EXPECT_ENOMEM(malloc(vmax));
	EXPECT_ENOMEM(malloc(vmax - 4095));
	EXPECT_ENOMEM(malloc(vptrdiff + 1));
	EXPECT_ENOMEM(malloc(vptrdiff));
	EXPECT_ENOMEM(realloc(NULL, vmax));
	EXPECT_ENOMEM(memalign(64, vmax));
	EXPECT_ENOMEM(memalign(4096, vptrdiff + 1));
	EXPECT_ENOMEM(aligned_alloc(64, vmax - 63));
	EXPECT_ENOMEM(valloc(vmax));
	EXPECT_ENOMEM(pvalloc(vmax - 100));   /* rounding up to a page must not wrap */
	/* Bigger than the whole range: with CONTIG_FALLBACK=none it cannot be served. */
	if (tu_size < ((size_t)1 << 46))
		EXPECT_ENOMEM(malloc(tu_size + 4096));
}

/* A failed realloc/reallocarray leaves the old block intact and usable. */
static void test_failed_realloc(void)
{
	size_t sizes[] = { 100, 5000, 300000, 20u << 20 }, i;

	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char *p = malloc(sizes[i]), *q;
		check_fresh(p, sizes[i], "malloc");
		tu_fill(p, sizes[i], i);
		EXPECT_ENOMEM(realloc(p, vmax));
		EXPECT_ENOMEM(realloc(p, vptrdiff + 1));
		EXPECT_ENOMEM(reallocarray(p, vmax / 2, 3));
		CHECK(tu_verify(p, sizes[i], i) < 0, "a failed realloc changed the block (%zu bytes)",
		      sizes[i]);
		q = realloc(p, sizes[i] * 2);
		CHECK(q != NULL, "realloc after a failed realloc returned NULL");
		CHECK(tu_verify(q, sizes[i], i) < 0, "realloc lost the data (%zu bytes)", sizes[i]);
		free(q);
	}
}

static void test_posix_memalign(void)
{
	static const size_t bad[] = { 3, 24, 0, 4, 1, 2, 48, 4097, (size_t)1 << 63 | 64 };
	size_t i;
	void *p;
	int rc;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		p = (void *)0x1234;
		rc = posix_memalign(&p, bad[i], 64);
		CHECK(rc == EINVAL, "posix_memalign(alignment %zu) returned %d, expected EINVAL", bad[i],
		      rc);
		CHECK(p == (void *)0x1234, "posix_memalign(alignment %zu) failed but changed *memptr",
		      bad[i]);
	}
	p = (void *)0x1234;
	rc = posix_memalign(&p, 64, vmax);
	CHECK(rc == ENOMEM, "posix_memalign(64, SIZE_MAX) returned %d, expected ENOMEM", rc);
	CHECK(p == (void *)0x1234, "posix_memalign(64, SIZE_MAX) failed but changed *memptr");
	/* The smallest legal alignment, sizeof(void *), and a large one. */
	rc = posix_memalign(&p, sizeof(void *), 10);
	CHECK(rc == 0, "posix_memalign(%zu, 10) returned %d", sizeof(void *), rc);
	check_fresh(p, 10, "posix_memalign(8, 10)");
	free(p);
	rc = posix_memalign(&p, (size_t)1 << 22, 10);
	CHECK(rc == 0, "posix_memalign(4 MiB, 10) returned %d", rc);
	CHECK((uintptr_t)p % ((size_t)1 << 22) == 0, "posix_memalign(4 MiB): %p misaligned", p);
	check_fresh(p, 10, "posix_memalign(4 MiB, 10)");
	free(p);
}

static void test_aligned_alloc(void)
{
	static const size_t bad[] = { 3, 24, 48, 100 };
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		void *p;
		errno = 0;
		p = aligned_alloc(bad[i], bad[i] * 4);
		CHECK(p == NULL, "aligned_alloc(%zu, %zu) = %p: a non-power-of-two alignment must fail "
		      "(glibc 2.38)", bad[i], bad[i] * 4, p);
		if (errno != EINVAL)
			printf("note: aligned_alloc(%zu, ...) failed with errno %d, not EINVAL\n", bad[i],
			       errno);
	}
	/* memalign keeps glibc's old leniency: a non-power-of-two alignment is rounded up (or refused). */
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		size_t a = 1;
		void *p;
		while (a < bad[i])
			a <<= 1;
		errno = 0;
		p = memalign(bad[i], 100);
		if (p == NULL) {
			CHECK(errno == EINVAL, "memalign(%zu, 100) = NULL with errno %d", bad[i], errno);
			continue;
		}
		CHECK((uintptr_t)p % a == 0, "memalign(%zu, 100) = %p is not aligned to %zu", bad[i], p, a);
		check_fresh(p, 100, "memalign(non-power-of-two)");
		free(p);
	}
}

static void test_zero_sizes(void)
{
	void *a = malloc(0), *b = malloc(0), *c = calloc(0, 0), *d = calloc(0, 16);
	void *e = realloc(NULL, 0), *f = memalign(64, 0);
	void *all[] = { a, b, c, d, e, f };
	size_t i, j;

	for (i = 0; i < 6; i++) {
		CHECK(all[i] != NULL, "zero-size allocation #%zu returned NULL", i);
		CHECK_RANGE(all[i], 1, "zero-size allocation");
		for (j = 0; j < i; j++)
			CHECK(all[i] != all[j], "zero-size allocations #%zu and #%zu are both %p", j, i,
			      all[i]);
	}
	for (i = 0; i < 6; i++)
		free(all[i]);
}

static void test_free_errno(void)
{
	size_t sizes[] = { 0, 24, 3000, 200000, 64u << 20 }, i;

	errno = 1234;
	free(NULL);
	CHECK(errno == 1234, "free(NULL) changed errno to %d", errno);
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		void *p = malloc(sizes[i]);
		CHECK(p != NULL, "malloc(%zu) returned NULL", sizes[i]);
		memset(p, 1, sizes[i]);
		errno = 1234;
		free(p);
		CHECK(errno == 1234, "free of a %zu-byte block changed errno to %d", sizes[i], errno);
	}
}

/* Under the kernel's heuristic overcommit (vm.overcommit_memory 0) a single request larger than
 * RAM and swap together fails, and glibc's malloc with it: so here, though the range could hold
 * it (a program that checks for NULL must get NULL, not memory the OOM killer comes for). */
static size_t meminfo_kb(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	size_t v = 0, klen = strlen(key);
	if (!f) return 0;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') { v = strtoull(line + klen + 1, NULL, 10); break; }
	fclose(f);
	return v;
}

static void test_more_than_memory(void)
{
	FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
	int mode = f ? fgetc(f) : -1;
	if (f) fclose(f);
	size_t kb = meminfo_kb("MemTotal") + meminfo_kb("SwapTotal");
	if (mode != '0' || !kb) return;
	size_t n = kb * 1024 + ((size_t)1 << 30);
	if (n >= tu_size) return;               /* the range alone refuses it (test_overflow) */
	EXPECT_ENOMEM(malloc(n));
	EXPECT_ENOMEM(calloc(1, n));
	void *p = malloc((size_t)2 << 20);
	CHECK(p != NULL, "malloc(2 MiB) failed");
	memset(p, 7, (size_t)2 << 20);
	EXPECT_ENOMEM(realloc(p, n));
	CHECK(((unsigned char *)p)[12345] == 7, "a failed realloc changed the block");
	free(p);
	errno = 0;
	void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m == MAP_FAILED && errno == ENOMEM, "mmap(%zu) gave %p, errno %d (want ENOMEM)", n, m, errno);
	/* not accounted by the kernel: granted, as the kernel would */
	m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(m != MAP_FAILED, "mmap(%zu, MAP_NORESERVE) failed: errno %d", n, errno);
	munmap(m, n);
}

int main(void)
{
	void *p;

	tu_init();
	test_overflow();
	test_failed_realloc();
	test_posix_memalign();
	test_aligned_alloc();
	test_zero_sizes();
	test_free_errno();
	test_more_than_memory();
	/* After all those failures the allocator still works. */
	p = malloc(1000);
	check_fresh(p, 1000, "malloc after errors");
	free(p);
	printf("t-errors: ok\n");
	return 0;
}
