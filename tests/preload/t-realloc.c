/* t-realloc.c - realloc keeps the data when it grows or shrinks a block across every size range
 * (16 B to 64 MiB, in place or moved), realloc(NULL, n) is malloc, realloc(p, 0) is safe, and
 * malloc_usable_size says the block's size for a live block and 0 for a freed one (by this
 * thread or another), a pointer inside a block and NULL. Run under LD_PRELOAD. */
#include "testutil.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

static void *checked_realloc(void *p, size_t old, size_t n, uint64_t seed)
{
	uintptr_t was = (uintptr_t)p;   /* printed only: p may be gone after realloc */
	void *q = realloc(p, n);
	long bad;

	CHECK(q != NULL, "realloc(%#lx, %zu -> %zu) returned NULL (errno %d)", (unsigned long)was, old, n, errno);
	CHECK_RANGE(q, n, "realloc");
	CHECK((uintptr_t)q % 16 == 0, "realloc(%zu -> %zu) = %p is not 16-aligned", old, n, q);
	CHECK(malloc_usable_size(q) >= n, "realloc(%zu -> %zu): usable size %zu", old, n,
	      malloc_usable_size(q));
	bad = tu_verify(q, min_sz(old, n), seed);
	CHECK(bad < 0, "realloc(%#lx, %zu -> %zu) = %p lost the data at byte %ld", (unsigned long)was,
	      old, n, q, bad);
	tu_fill(q, n, seed);   /* the grown part too, so the next step checks all of it */
	return q;
}

/* Walk one block up the sizes and back down; 'blocker' allocations between steps make some
 * reallocs move and let others grow in place. */
static void ladder(int with_blockers, uint64_t seed)
{
	enum { MAXB = 64 };
	void *blockers[MAXB];
	size_t nb = 0, n = 16, old;
	void *p = malloc(n);

	CHECK(p != NULL, "malloc(16) returned NULL");
	tu_fill(p, n, seed);
	while (n < ((size_t)64 << 20)) {
		old = n;
		n = n * 2 + (n % 7);    /* not only powers of two */
		if (n > ((size_t)64 << 20))
			n = (size_t)64 << 20;
		p = checked_realloc(p, old, n, seed);
		if (with_blockers && nb < MAXB) {
			blockers[nb] = malloc(n / 4 + 1);
			CHECK(blockers[nb] != NULL, "malloc blocker failed");
			nb++;
		}
		/* Small steps too: grow and shrink by a few bytes. */
		p = checked_realloc(p, n, n + 3, seed);
		p = checked_realloc(p, n + 3, n, seed);
	}
	while (n > 16) {
		old = n;
		n = n / 3 + 5;
		p = checked_realloc(p, old, n, seed);
	}
	free(p);
	while (nb > 0)
		free(blockers[--nb]);
}

/* Many blocks resized at random, all verified at the end. */
static void random_churn(void)
{
	enum { N = 500, STEPS = 20000 };
	static void *blk[N];
	static size_t len[N];
	uint64_t rs = 7;
	size_t i;
	int s;

	for (s = 0; s < STEPS; s++) {
		size_t n;
		i = tu_rand(&rs) % N;
		switch (tu_rand(&rs) % 8) {
		case 0: n = tu_rand(&rs) % 300000; break;
		case 1: n = len[i] + tu_rand(&rs) % 64; break;
		case 2: n = len[i] / 2; break;
		default: n = tu_rand(&rs) % 2048; break;
		}
		if (n == 0)
			n = 1;
		blk[i] = blk[i] == NULL ? malloc(n) : checked_realloc(blk[i], len[i], n, i);
		CHECK(blk[i] != NULL, "malloc(%zu) failed", n);
		CHECK_RANGE(blk[i], n, "realloc churn");
		len[i] = n;
		tu_fill(blk[i], n, i);
	}
	for (i = 0; i < N; i++) {
		if (blk[i] != NULL)
			CHECK(tu_verify(blk[i], len[i], i) < 0, "churn block %zu (%zu bytes) corrupted", i,
			      len[i]);
		free(blk[i]);
	}
}

static void *free_it(void *p)
{
	free(p);
	return NULL;
}

/* malloc_usable_size on small blocks (its fast path), a medium and a large one. Nothing is
 * allocated between a free and the look at the freed block, so it cannot be handed out again. */
static void usable_sizes(void)
{
	static const size_t sizes[] = { 1, 16, 40, 100, 1000, 5000, 16384, 40000, 300000 };
	size_t i, u;

	CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) = %zu", malloc_usable_size(NULL));
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		size_t n = sizes[i];
		unsigned char *p = malloc(n), *keep = malloc(n);
		pthread_t t;

		CHECK(p != NULL && keep != NULL, "malloc(%zu) failed", n);
		u = malloc_usable_size(p);
		CHECK(u >= n && u <= n + n / 4 + 4096, "malloc_usable_size of a %zu-byte block: %zu", n, u);
		memset(p, 7, u);
		CHECK(malloc_usable_size(p + 16) == 0, "malloc_usable_size inside a %zu-byte block: %zu", n,
		      malloc_usable_size(p + 16));
		free(p);
		CHECK(malloc_usable_size(p) == 0, "malloc_usable_size of a freed %zu-byte block: %zu", n,
		      malloc_usable_size(p));
		/* freed by another thread, not taken back yet by this one (it mallocs nothing) */
		CHECK(pthread_create(&t, NULL, free_it, keep) == 0, "pthread_create failed");
		pthread_join(t, NULL);
		CHECK(malloc_usable_size(keep) == 0, "malloc_usable_size of a %zu-byte block another thread "
		      "freed: %zu", n, malloc_usable_size(keep));
	}
}

int main(void)
{
	void *p, *q;
	int i;

	tu_init();
	ladder(0, 1);
	ladder(1, 2);
	random_churn();
	usable_sizes();

	/* realloc(NULL, n) is malloc(n). */
	p = realloc(NULL, 100);
	CHECK(p != NULL, "realloc(NULL, 100) returned NULL");
	CHECK_RANGE(p, 100, "realloc(NULL, 100)");
	memset(p, 1, 100);
	free(p);
	p = realloc(NULL, (size_t)20 << 20);
	CHECK(p != NULL, "realloc(NULL, 20 MiB) returned NULL");
	CHECK_RANGE(p, (size_t)20 << 20, "realloc(NULL, 20 MiB)");
	free(p);

	/* realloc(p, 0): glibc frees and returns NULL; a minimal valid block is also acceptable. */
	for (i = 0; i < 3; i++) {
		size_t n = i == 0 ? 64 : i == 1 ? 100000 : (size_t)16 << 20;
		p = malloc(n);
		CHECK(p != NULL, "malloc(%zu) failed", n);
		memset(p, 3, n);
		q = realloc(p, 0);
		if (q != NULL) {
			CHECK_RANGE(q, 1, "realloc(p, 0)");
			free(q);
		}
	}
	printf("t-realloc: ok\n");
	return 0;
}
