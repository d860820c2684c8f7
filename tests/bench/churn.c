/* churn: single-thread small-block churn.
 * A working set of 10000 slots; each op picks a random slot, frees what is
 * there (after checking the bytes written into it) and puts a new block of a
 * random small size in it.  Sizes 8..512 B, skewed to small: 62% 8..64 B,
 * 28% 64..256 B, 10% 256..512 B.  ~20M ops (malloc+free pairs) at scale 1.
 * Usage: churn [scale]   Prints one deterministic checksum line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SLOTS 10000

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static inline uint64_t rnd(void)
{
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return rng;
}

static inline size_t pick_size(uint64_t r)
{
	unsigned u = (unsigned)(r & 1023);
	if (u < 640) return 8 + (r >> 10) % 57;     /* 8..64 */
	if (u < 928) return 64 + (r >> 10) % 193;   /* 64..256 */
	return 256 + (r >> 10) % 257;               /* 256..512 */
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	long ops = (long)(20e6 * scale);
	if (ops < 1000) ops = 1000;
	static unsigned char *slot[SLOTS];
	static uint32_t size[SLOTS];
	uint64_t h = 0;
	for (long n = 0; n < ops; n++) {
		uint64_t r = rnd();
		unsigned i = (unsigned)((r >> 32) % SLOTS);
		unsigned char *p = slot[i];
		if (p) {
			uint32_t s = size[i];
			if (p[0] != (unsigned char)s || p[s - 1] != (unsigned char)(s * 7 + i)) {
				fprintf(stderr, "churn: corrupted block in slot %u\n", i);
				return 2;
			}
			h = (h ^ (p[0] + ((uint64_t)p[s - 1] << 8) + s)) * 0x100000001b3ull;
			free(p);
		}
		size_t s = pick_size(r);
		p = malloc(s);
		if (!p) { fprintf(stderr, "churn: malloc(%zu) failed\n", s); return 2; }
		p[0] = (unsigned char)s;
		p[s - 1] = (unsigned char)(s * 7 + i);
		slot[i] = p;
		size[i] = (uint32_t)s;
	}
	for (unsigned i = 0; i < SLOTS; i++) {
		if (slot[i]) { h = (h ^ slot[i][0]) * 0x100000001b3ull; free(slot[i]); }
	}
	printf("churn ops=%ld checksum=%016llx\n", ops, (unsigned long long)h);
	return 0;
}
