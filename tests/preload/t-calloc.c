/* t-calloc.c - calloc returns zeroed memory even when it reuses blocks that were dirtied and
 * freed, for small, medium (64 KiB-1 MiB) and large (8-64 MiB) sizes, and a big block freed with
 * few of its pages touched is zeroed without making the rest resident. Run under LD_PRELOAD. */
#include "testutil.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_zero(const void *p, size_t n, const char *what)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i += 8) {
		size_t k = n - i < 8 ? n - i : 8;
		uint64_t w = 0;
		memcpy(&w, c + i, k);
		CHECK(w == 0, "%s: calloc(%zu) = %p has non-zero bytes at %zu..%zu", what, n, p, i,
		      i + k - 1);
	}
}

/* Dirty a set of blocks, free them, calloc the same sizes: the blocks (often the same ones) are zero. */
static void rounds(const char *what, const size_t *sizes, size_t count, int nrounds)
{
	void **blk = malloc(count * sizeof *blk);
	size_t i;
	int r;

	CHECK(blk != NULL, "malloc of the block table failed");
	for (i = 0; i < count; i++) {
		blk[i] = malloc(sizes[i]);
		CHECK(blk[i] != NULL, "%s: malloc(%zu) returned NULL", what, sizes[i]);
		CHECK_RANGE(blk[i], sizes[i], what);
		memset(blk[i], 0xAA, sizes[i]);
	}
	for (r = 0; r < nrounds; r++) {
		for (i = 0; i < count; i++)
			free(blk[i]);
		for (i = 0; i < count; i++) {
			/* Alternate the argument order: calloc(n, 1) and calloc(1, n) must both zero. */
			blk[i] = (i + r) % 2 ? calloc(sizes[i], 1) : calloc(1, sizes[i]);
			CHECK(blk[i] != NULL, "%s: calloc(%zu) returned NULL", what, sizes[i]);
			CHECK_RANGE(blk[i], sizes[i], what);
			check_zero(blk[i], sizes[i], what);
			memset(blk[i], 0xAA, sizes[i]);
		}
	}
	for (i = 0; i < count; i++)
		free(blk[i]);
	free(blk);
}

static long rss_kb(void)
{
	long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	CHECK(f != NULL, "cannot open /proc/self/statm");
	CHECK(fscanf(f, "%ld %ld", &size, &res) == 2, "cannot read /proc/self/statm");
	fclose(f);
	return res * 4;
}

/* Touch every stride-th 4 KiB page of a block (dense pages first: the first dense bytes), free
 * it, calloc the same size: zero everywhere, and what calloc made resident is at most what was
 * touched (a memset of it all would add all of it). */
static void sparse(size_t n, size_t dense, size_t stride)
{
	unsigned char *p = malloc(n);
	size_t i, touched = dense;
	long before, grew;

	CHECK(p != NULL, "sparse: malloc(%zu) returned NULL", n);
	free(p);
	malloc_trim(0);        /* what the rounds before left resident goes back */
	p = malloc(n);
	CHECK(p != NULL, "sparse: malloc(%zu) returned NULL", n);
	memset(p, 0xAA, dense);
	for (i = dense; i < n; i += stride * 4096, touched += 4096)
		p[i] = 0xAA;
	p[n - 1] = 0xAA;
	free(p);
	before = rss_kb();
	p = calloc(1, n);
	CHECK(p != NULL, "sparse: calloc(%zu) returned NULL", n);
	grew = rss_kb() - before;
	CHECK(grew <= (long)(touched / 1024) + 1024,
	      "sparse: calloc(%zu) after a block with %zu KiB touched made %ld KiB resident", n,
	      touched / 1024, grew);
	check_zero(p, n, "sparse");
	free(p);
}

int main(void)
{
	enum { NSMALL = 3000, NMED = 24 };
	static size_t small[NSMALL], med[NMED];
	static const size_t large[] = { 8u << 20, (8u << 20) + 1, 12u << 20, 16u << 20,
	                                (32u << 20) - 4096, 64u << 20 };
	uint64_t rs = 42;
	size_t i;
	int rep;

	tu_init();
	for (i = 0; i < NSMALL; i++)
		small[i] = 1 + tu_rand(&rs) % (i % 3 ? 256 : 8192);
	for (i = 0; i < NMED; i++)
		med[i] = (64u << 10) + tu_rand(&rs) % ((1u << 20) - (64u << 10) + 1);
	rounds("small", small, NSMALL, 20);
	rounds("medium", med, NMED, 10);
	rounds("large", large, sizeof large / sizeof large[0], 3);
	sparse(64u << 20, 0, 16);
	sparse((64u << 20) + 12345, 16u << 20, 3);
	sparse((3u << 20) + 777, 1u << 20, 1);
	sparse((20u << 20), 0, 1);

	/* Interleaved: dirty one size class, free half, calloc a mix so neighbours get reused too. */
	for (rep = 0; rep < 200; rep++) {
		void *a[64];
		for (i = 0; i < 64; i++) {
			a[i] = malloc(48 + i * 8);
			CHECK(a[i] != NULL, "malloc failed");
			memset(a[i], 0x55, 48 + i * 8);
		}
		for (i = 0; i < 64; i += 2)
			free(a[i]);
		for (i = 0; i < 64; i += 2) {
			a[i] = calloc(3, 16 + i * 8 / 3);
			CHECK(a[i] != NULL, "calloc failed");
			CHECK_RANGE(a[i], 3 * (16 + i * 8 / 3), "calloc");
			check_zero(a[i], 3 * (16 + i * 8 / 3), "interleaved");
		}
		for (i = 0; i < 64; i++)
			free(a[i]);
	}
	printf("t-calloc: ok\n");
	return 0;
}
