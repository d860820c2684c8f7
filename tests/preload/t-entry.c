/* t-entry.c - every malloc-family entry point returns in-range, aligned, fully usable memory
 * for sizes from 0 to 256 MiB, and every free variant takes it back. Run under LD_PRELOAD. */
#define _GNU_SOURCE
#include "testutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "contig.h"

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*reallocarray_fn)(void *, size_t, size_t);
typedef void *(*memalign_fn)(size_t, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void (*free_fn)(void *);
typedef void (*free_sized_fn)(void *, size_t);
typedef void (*free_aligned_sized_fn)(void *, size_t, size_t);
typedef int (*get_stats_fn)(contig_stats_t *);

static malloc_fn libc_malloc, libc_valloc, libc_pvalloc;
static calloc_fn libc_calloc;
static realloc_fn libc_realloc;
static memalign_fn libc_memalign;
static posix_memalign_fn libc_posix_memalign;
static free_fn libc_free, cfree_p;
static free_sized_fn free_sized_p;
static free_aligned_sized_fn free_aligned_sized_p;

static size_t page_size;
static char doing[160];   /* the call in progress, for the SIGABRT/SIGSEGV report */
static unsigned long n_checked;
static size_t n_free_variant;

static void *need(const char *name)
{
	void *f = dlsym(RTLD_DEFAULT, name);

	CHECK(f != NULL, "entry point %s is not defined (dlsym: %s)", name, dlerror());
	return f;
}

/* Plain (unaligned) allocators: 16-byte alignment is the minimum. */
enum { EP_MALLOC, EP_CALLOC, EP_CALLOC_N, EP_REALLOC, EP_REALLOCARRAY, EP_LIBC_MALLOC,
       EP_LIBC_CALLOC, EP_LIBC_REALLOC, EP_VALLOC, EP_PVALLOC, EP_LIBC_VALLOC, EP_LIBC_PVALLOC,
       EP_PLAIN_COUNT };
static const char *const plain_name[EP_PLAIN_COUNT] = {
	"malloc", "calloc(1,n)", "calloc(n/8,8)", "realloc(NULL,n)", "reallocarray(NULL,1,n)",
	"__libc_malloc", "__libc_calloc", "__libc_realloc(NULL,n)", "valloc", "pvalloc",
	"__libc_valloc", "__libc_pvalloc"
};

enum { EP_MEMALIGN, EP_POSIX_MEMALIGN, EP_ALIGNED_ALLOC, EP_LIBC_MEMALIGN, EP_POSIX_MEMALIGN2,
       EP_ALIGNED_COUNT };
static const char *const aligned_name[EP_ALIGNED_COUNT] = {
	"memalign", "posix_memalign", "aligned_alloc", "__libc_memalign", "__posix_memalign"
};

static void *plain_alloc(int ep, size_t n, size_t *align, size_t *min_usable, int *zeroed)
{
	snprintf(doing, sizeof doing, "%s(size %zu)", plain_name[ep], n);
	*align = 16;
	*min_usable = n;
	*zeroed = 0;
	switch (ep) {
	case EP_MALLOC: return malloc(n);
	case EP_CALLOC: *zeroed = 1; return calloc(1, n);
	case EP_CALLOC_N: *zeroed = 1; *min_usable = n / 8 * 8; return calloc(n / 8, 8);
	case EP_REALLOC: return realloc(NULL, n);
	case EP_REALLOCARRAY: return reallocarray(NULL, 1, n);
	case EP_LIBC_MALLOC: return libc_malloc(n);
	case EP_LIBC_CALLOC: *zeroed = 1; return libc_calloc(n, 1);
	case EP_LIBC_REALLOC: return libc_realloc(NULL, n);
	case EP_VALLOC: *align = page_size; return valloc(n);
	case EP_LIBC_VALLOC: *align = page_size; return libc_valloc(n);
	case EP_PVALLOC:
	case EP_LIBC_PVALLOC:
		*align = page_size;
		/* pvalloc rounds the size up to whole pages. */
		*min_usable = (n + page_size - 1) / page_size * page_size;
		return ep == EP_PVALLOC ? pvalloc(n) : libc_pvalloc(n);
	default: abort();
	}
}

static void *aligned_alloc_ep(int ep, size_t align, size_t n)
{
	void *p = NULL;
	int rc;

	snprintf(doing, sizeof doing, "%s(align %zu, size %zu)", aligned_name[ep], align, n);
	switch (ep) {
	case EP_MEMALIGN: return memalign(align, n);
	case EP_ALIGNED_ALLOC: return aligned_alloc(align, n);
	case EP_LIBC_MEMALIGN: return libc_memalign(align, n);
	case EP_POSIX_MEMALIGN:
	case EP_POSIX_MEMALIGN2:
		rc = ep == EP_POSIX_MEMALIGN ? posix_memalign(&p, align, n)
		                             : libc_posix_memalign(&p, align, n);
		CHECK(rc == 0, "%s(align %zu, size %zu) returned %d", aligned_name[ep], align, n, rc);
		return p;
	default: abort();
	}
}

/* Free with one of the variants in turn; aligned blocks never go to free_sized (C23: only
 * free_aligned_sized for aligned_alloc blocks). */
static void free_variant(void *p, size_t n, size_t align, int from_aligned_alloc, int from_valloc)
{
	snprintf(doing + strlen(doing), sizeof doing - strlen(doing), ", then free #%zu of %p",
	         n_free_variant % 4, p);
	switch (n_free_variant++ % 4) {
	case 0: free(p); break;
	case 1: libc_free(p); break;
	case 2: cfree_p(p); break;
	default:
		if (from_aligned_alloc)
			free_aligned_sized_p(p, align, n);
		else if (!from_valloc && align <= 16)
			free_sized_p(p, n);
		else
			free(p);
		break;
	}
}

static void check_block(const char *what, void *p, size_t n, size_t align, size_t min_usable,
                        int zeroed)
{
	size_t usable, i;
	const unsigned char *c = p;
	long bad;

	CHECK(p != NULL, "%s(size %zu, align %zu) returned NULL (errno %d)", what, n, align, errno);
	CHECK((uintptr_t)p % align == 0, "%s(size %zu): %p is not aligned to %zu", what, n, p, align);
	usable = malloc_usable_size(p);
	CHECK(usable >= min_usable, "%s(size %zu): malloc_usable_size %zu < %zu", what, n, usable,
	      min_usable);
	CHECK(usable <= min_usable + (min_usable >> 1) + 2 * page_size + align,
	      "%s(size %zu): malloc_usable_size %zu is implausibly large", what, n, usable);
	CHECK_RANGE(p, usable == 0 ? 1 : usable, what);
	if (zeroed)
		for (i = 0; i < min_usable; i += 8) {
			size_t k = min_usable - i < 8 ? min_usable - i : 8;
			uint64_t w = 0;
			memcpy(&w, c + i, k);
			CHECK(w == 0, "%s(size %zu): bytes %zu..%zu of %p are not zero", what, n, i,
			      i + k - 1, p);
		}
	tu_fill(p, usable, (uint64_t)(uintptr_t)p ^ n);
	bad = tu_verify(p, usable, (uint64_t)(uintptr_t)p ^ n);
	CHECK(bad < 0, "%s(size %zu): %p byte %ld did not keep what was written", what, n, p, bad);
	n_checked++;
}

static size_t ladder[128];
static size_t n_ladder;

static void build_ladder(void)
{
	static const size_t first[] = { 0, 1, 15, 16, 17 };
	size_t i;
	int k;

	for (i = 0; i < sizeof first / sizeof first[0]; i++)
		ladder[n_ladder++] = first[i];
	for (k = 5; k <= 28; k++) {
		ladder[n_ladder++] = ((size_t)1 << k) - 1;
		ladder[n_ladder++] = (size_t)1 << k;
		ladder[n_ladder++] = ((size_t)1 << k) + 1;
	}
}

/* The full ladder for the main entry points, a shorter one elsewhere (the suite must stay fast). */
static int in_short_ladder(size_t n)
{
	return n <= ((size_t)4 << 20) || n == ((size_t)64 << 20) + 1 || n == ((size_t)256 << 20);
}

static void test_plain(void)
{
	size_t i;
	int ep;

	for (ep = 0; ep < EP_PLAIN_COUNT; ep++) {
		int full = ep == EP_MALLOC || ep == EP_CALLOC || ep == EP_REALLOC;
		for (i = 0; i < n_ladder; i++) {
			size_t n = ladder[i], align, min_usable;
			int zeroed;
			void *p;

			if (!full && !in_short_ladder(n))
				continue;
			p = plain_alloc(ep, n, &align, &min_usable, &zeroed);
			check_block(plain_name[ep], p, n, align, min_usable, zeroed);
			/* free_sized takes the size asked for: calloc(n/8, 8) asked for n/8*8 bytes. */
			free_variant(p, ep == EP_CALLOC_N ? n / 8 * 8 : n, align, 0, align > 16);
		}
	}
}

static void test_aligned(void)
{
	int ep;
	size_t align, i;

	for (ep = 0; ep < EP_ALIGNED_COUNT; ep++) {
		for (align = 16; align <= ((size_t)1 << 20); align <<= 1) {
			const size_t sizes[] = { 0, 1, 17, align - 1, align, align + 1, 3 * align + 5,
			                         ((size_t)1 << 20) + 1, ((size_t)8 << 20) + 3 };
			for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
				void *p = aligned_alloc_ep(ep, align, sizes[i]);
				check_block(aligned_name[ep], p, sizes[i], align, sizes[i], 0);
				free_variant(p, sizes[i], align, ep == EP_ALIGNED_ALLOC, 1);
			}
			if (align != 32 && align != 64 && align != 4096)
				continue;
			for (i = 0; i < n_ladder; i++) {
				void *p;
				if (!in_short_ladder(ladder[i]))
					continue;
				p = aligned_alloc_ep(ep, align, ladder[i]);
				check_block(aligned_name[ep], p, ladder[i], align, ladder[i], 0);
				free_variant(p, ladder[i], align, ep == EP_ALIGNED_ALLOC, 1);
			}
		}
	}
}

/* Many blocks live at once, so the allocator cannot serve them all from one recycled slot. */
static void test_many_live(void)
{
	enum { N = 4000 };
	static void *blk[N];
	static size_t len[N];
	uint64_t rs = 12345;
	size_t i;

	for (i = 0; i < N; i++) {
		len[i] = tu_rand(&rs) % (i % 100 == 0 ? 300000 : 2000);
		blk[i] = malloc(len[i]);
		CHECK(blk[i] != NULL, "malloc(%zu) returned NULL", len[i]);
		CHECK_RANGE(blk[i], len[i], "malloc (many live)");
		CHECK((uintptr_t)blk[i] % 16 == 0, "malloc(%zu) = %p not 16-aligned", len[i], blk[i]);
		tu_fill(blk[i], len[i], i);
	}
	for (i = 0; i < N; i++) {
		long bad = tu_verify(blk[i], len[i], i);
		CHECK(bad < 0, "block %zu (%p, %zu bytes) overwritten at byte %ld", i, blk[i], len[i],
		      bad);
	}
	for (i = 0; i < N; i += 2)
		free_sized_p(blk[i], len[i]);
	for (i = 1; i < N; i += 2)
		free(blk[i]);
}

/* free_sized and free_aligned_sized really free: the memory comes back, and the live count drops. */
static void test_sized_frees(void)
{
	enum { N = 1000 };
	static void *a[N], *b[N];
	size_t i, j, reused = 0;
	get_stats_fn get_stats = (get_stats_fn)dlsym(RTLD_DEFAULT, "contig_get_stats");
	contig_stats_t before, after;

	memset(&before, 0, sizeof before);
	before.size = sizeof before;
	after = before;
	if (get_stats != NULL)
		CHECK(get_stats(&before) == 0, "contig_get_stats failed (errno %d)", errno);
	for (i = 0; i < N; i++) {
		a[i] = malloc(100);
		CHECK(a[i] != NULL, "malloc(100) returned NULL");
	}
	for (i = 0; i < N; i++)
		free_sized_p(a[i], 100);
	for (i = 0; i < N; i++) {
		b[i] = malloc(100);
		CHECK(b[i] != NULL, "malloc(100) returned NULL");
	}
	/* Sorting is overkill: addresses repeat within a small window in any sane allocator. */
	for (i = 0; i < N; i++)
		for (j = 0; j < N; j++)
			if (b[i] == a[j]) {
				reused++;
				break;
			}
	CHECK(reused >= N / 2, "free_sized: only %zu of %d freed 100-byte blocks were reused", reused,
	      N);
	for (i = 0; i < N; i++)
		free(b[i]);

	for (i = 0; i < N; i++) {
		a[i] = aligned_alloc(256, 512);
		CHECK(a[i] != NULL && (uintptr_t)a[i] % 256 == 0, "aligned_alloc(256, 512) = %p", a[i]);
	}
	for (i = 0; i < N; i++)
		free_aligned_sized_p(a[i], 256, 512);
	for (i = 0, reused = 0; i < N; i++) {
		b[i] = aligned_alloc(256, 512);
		CHECK(b[i] != NULL, "aligned_alloc(256, 512) returned NULL");
		for (j = 0; j < N; j++)
			if (b[i] == a[j]) {
				reused++;
				break;
			}
	}
	CHECK(reused >= N / 4, "free_aligned_sized: only %zu of %d freed blocks were reused", reused,
	      N);
	for (i = 0; i < N; i++)
		free_aligned_sized_p(b[i], 256, 512);

	if (get_stats == NULL) {
		printf("note: contig_get_stats not found; live-block count not checked\n");
		return;
	}
	CHECK(get_stats(&after) == 0, "contig_get_stats failed (errno %d)", errno);
	CHECK(after.live_blocks < before.live_blocks + N / 10,
	      "live blocks went from %zu to %zu after freeing everything with free_sized/"
	      "free_aligned_sized", before.live_blocks, after.live_blocks);
}

/* A crash inside the library says which call caused it. */
/* Runs of one class from 128 bytes to 2 KiB start their first block at different colours (a
 * multiple of 64 bytes past the run's 64 KiB page), so that blocks of one index in different runs
 * fall in different cache sets; requests aligned to more than 64 bytes still get aligned blocks
 * of those sizes (from the class's aligned twin), mixed with plain mallocs of the same size. */
static void test_colours(void)
{
	enum { N = 8192 };
	static const size_t sizes[] = { 128, 1000, 1024, 2048, 4096 };
	static void *plain[N], *al[N];
	size_t s, i;

	for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		/* 128 bytes has two colours and 512 blocks a run: 16 runs, not 4, so that every run
		 * landing on pages whose hash picks the same colour is no longer a 1-in-8 chance */
		size_t n = sizes[s], align = 128, count = n == 128 ? N : 2048;
		unsigned long offsets = 0;
		while (align * 2 <= n) align *= 2;
		for (i = 0; i < count; i++) {
			plain[i] = malloc(n);
			CHECK(plain[i] != NULL && posix_memalign(&al[i], align, n) == 0, "malloc(%zu) failed", n);
			CHECK(((uintptr_t)al[i] & (align - 1)) == 0, "posix_memalign(%zu, %zu) = %p, misaligned",
			      align, n, al[i]);
			CHECK(((uintptr_t)plain[i] & 15) == 0, "malloc(%zu) = %p, misaligned", n, plain[i]);
			memset(plain[i], 0x5a, n);
			memset(al[i], 0xa5, n);
			/* the offsets, past a multiple of the block size, at which this size's blocks sit
			 * in their 64 KiB pages: one bit per multiple of 64 bytes */
			offsets |= 1ul << ((((uintptr_t)plain[i] & 0xffff) % n) / 64 % 64);
		}
		/* classes from 128 bytes to 2 KiB are coloured (4096's runs hold 16 blocks, and
		 * a colour would cost one of them) */
		CHECK(__builtin_popcountl(offsets) >= (n > 2048 ? 1 : n >= 256 ? 4 : 2),
		      "malloc(%zu): %d colours in %zu blocks", n, __builtin_popcountl(offsets), count);
		for (i = 0; i < count; i++) {
			CHECK(((unsigned char *)plain[i])[n - 1] == 0x5a && ((unsigned char *)al[i])[0] == 0xa5,
			      "block of %zu bytes overwritten", n);
			free(plain[i]);
			free(al[i]);
		}
	}
}

static void on_signal(int sig)
{
	static const char pre[] = "t-entry: killed during ";
	ssize_t r;

	r = write(2, pre, sizeof pre - 1);
	r = write(2, doing, strlen(doing));
	r = write(2, "\n", 1);
	(void)r;
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(void)
{
	tu_init();
	signal(SIGABRT, on_signal);
	signal(SIGSEGV, on_signal);
	signal(SIGBUS, on_signal);
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	libc_malloc = (malloc_fn)need("__libc_malloc");
	libc_calloc = (calloc_fn)need("__libc_calloc");
	libc_realloc = (realloc_fn)need("__libc_realloc");
	libc_memalign = (memalign_fn)need("__libc_memalign");
	libc_valloc = (malloc_fn)need("__libc_valloc");
	libc_pvalloc = (malloc_fn)need("__libc_pvalloc");
	libc_posix_memalign = (posix_memalign_fn)need("__posix_memalign");
	libc_free = (free_fn)need("__libc_free");
	cfree_p = (free_fn)need("cfree");
	free_sized_p = (free_sized_fn)need("free_sized");
	free_aligned_sized_p = (free_aligned_sized_fn)need("free_aligned_sized");
	build_ladder();

	test_plain();
	test_aligned();
	test_many_live();
	test_sized_frees();
	test_colours();
	printf("t-entry: %lu blocks checked\n", n_checked);
	return 0;
}
