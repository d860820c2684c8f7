/* burst: allocate a burst, free it all, repeat.  Each burst allocates a
 * random number (1000..20000) of blocks of random sizes (8..2048 B, skewed
 * small: 70% 8..128 B, 25% 128..1024 B, 5% 1024..2048 B) and writes them,
 * then frees them all, in allocation order for even bursts and in reverse
 * for odd ones.  1000 bursts (~10M blocks) at scale 1, one thread.
 * Usage: burst [scale]   Prints one deterministic checksum line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXN 20000

static uint64_t rng = 0xb7e151628aed2a6bull;
static inline uint64_t rnd(void)
{
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return rng;
}

static inline size_t pick_size(uint64_t r)
{
	unsigned u = (unsigned)(r % 100);
	if (u < 70) return 8 + (r >> 8) % 121;       /* 8..128 */
	if (u < 95) return 128 + (r >> 8) % 897;     /* 128..1024 */
	return 1024 + (r >> 8) % 1025;               /* 1024..2048 */
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	long bursts = (long)(1000 * scale);
	if (bursts < 10) bursts = 10;
	static unsigned char *blk[MAXN];
	static uint16_t size[MAXN];
	uint64_t h = 0, blocks = 0;
	for (long b = 0; b < bursts; b++) {
		unsigned n = 1000 + (unsigned)(rnd() % (MAXN - 999));
		for (unsigned i = 0; i < n; i++) {
			size_t s = pick_size(rnd());
			unsigned char *p = malloc(s);
			if (!p) { fprintf(stderr, "burst: malloc(%zu) failed\n", s); return 2; }
			p[0] = (unsigned char)i;
			p[s - 1] = (unsigned char)(s ^ b);
			blk[i] = p;
			size[i] = (uint16_t)s;
		}
		for (unsigned k = 0; k < n; k++) {
			unsigned i = (b & 1) ? n - 1 - k : k;
			unsigned char *p = blk[i];
			unsigned s = size[i];
			if (p[0] != (unsigned char)i || p[s - 1] != (unsigned char)(s ^ b)) {
				fprintf(stderr, "burst: corrupted block\n");
				return 2;
			}
			h = (h ^ (p[s - 1] + s)) * 0x100000001b3ull;
			free(p);
		}
		blocks += n;
	}
	printf("burst bursts=%ld blocks=%llu checksum=%016llx\n", bursts, (unsigned long long)blocks,
	       (unsigned long long)h);
	return 0;
}
