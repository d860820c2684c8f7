/* large: medium and large blocks, 64 KiB .. 8 MiB, touched.
 * 24 slots replaced at random; sizes log-uniform in [64 KiB, 8 MiB).  Every
 * new block gets 8 bytes written in each of its 4 KiB pages (so the pages are
 * really faulted in, as a program using the memory would); before a block is
 * freed its first, middle and last pages are checked.  4000 ops at scale 1.
 * Usage: large [scale]   Prints one deterministic checksum line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 24
#define PAGE 4096

static uint64_t rng = 0xda942042e4dd58b5ull;
static inline uint64_t rnd(void)
{
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return rng;
}

static uint64_t h = 0;

static void check(unsigned char *p, size_t sz, unsigned char v)
{
	size_t last = (sz - 8) & ~(size_t)(PAGE - 1);
	size_t pos[3] = { 0, ((sz / 2) & ~(size_t)(PAGE - 1)), last };
	for (int k = 0; k < 3; k++) {
		unsigned char *q = p + pos[k];
		if (q[0] != v || q[7] != v) { fprintf(stderr, "large: corrupted block\n"); exit(2); }
		h = (h ^ (q[0] + pos[k])) * 0x100000001b3ull;
	}
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	long ops = (long)(4000 * scale);
	if (ops < 50) ops = 50;
	unsigned char *slot[SLOTS] = { 0 };
	size_t size[SLOTS];
	unsigned char val[SLOTS];
	for (long n = 0; n < ops; n++) {
		uint64_t r = rnd();
		unsigned i = (unsigned)((r >> 40) % SLOTS);
		if (slot[i]) { check(slot[i], size[i], val[i]); free(slot[i]); }
		unsigned e = 16 + (unsigned)(r % 7);  /* 2^e + rand(2^e): 64 KiB .. 8 MiB */
		size_t sz = ((size_t)1 << e) + (rnd() % ((size_t)1 << e));
		unsigned char *p = malloc(sz);
		if (!p) { fprintf(stderr, "large: malloc(%zu) failed\n", sz); return 2; }
		unsigned char v = (unsigned char)(n * 13 + 1);
		for (size_t off = 0; off + 8 <= sz; off += PAGE) memset(p + off, v, 8);
		memset(p + ((sz - 8) & ~(size_t)(PAGE - 1)), v, 8);
		slot[i] = p; size[i] = sz; val[i] = v;
	}
	for (unsigned i = 0; i < SLOTS; i++)
		if (slot[i]) { check(slot[i], size[i], val[i]); free(slot[i]); }
	printf("large ops=%ld checksum=%016llx\n", ops, (unsigned long long)h);
	return 0;
}
