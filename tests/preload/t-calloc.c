/* t-calloc.c - calloc returns zeroed memory even when it reuses blocks that were dirtied and
 * freed, for small, medium (64 KiB-1 MiB) and large (8-64 MiB) sizes. Run under LD_PRELOAD. */
#include "testutil.h"

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
