/* frag: fragmentation.  Phase 1 allocates 2M small blocks (16..128 B) at
 * scale 1; phase 2 frees a random 90% of them, leaving survivors scattered
 * over every page; phase 3 allocates larger blocks (256..2048 B) until the
 * live bytes are back at the phase-1 peak.  A perfect allocator would reuse
 * the freed small-block memory for the large blocks and peak at about the
 * peak live bytes; one that segregates sizes and cannot return partly used
 * pages peaks near twice that.
 * The program tracks live bytes itself (requested sizes plus its own slot
 * array, which is also a heap block) and prints the peak as
 * "peak_live=<bytes>", so the runner can report peak RSS / peak live.
 * Usage: frag [scale]   Prints one deterministic line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x6a09e667f3bcc909ull;
static inline uint64_t rnd(void)
{
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return rng;
}

static size_t live, peak;
static inline void add(size_t n) { live += n; if (live > peak) peak = live; }

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	size_t n = (size_t)(2e6 * scale);
	if (n < 10000) n = 10000;
	size_t cap = n * 2;      /* slots for phase 1 and phase 3 blocks */
	unsigned char **blk = malloc(cap * sizeof(*blk));
	uint32_t *sz = malloc(cap * sizeof(*sz));
	if (!blk || !sz) return 2;
	add(cap * (sizeof(*blk) + sizeof(*sz)));
	uint64_t h = 0;
	/* phase 1: small blocks */
	for (size_t i = 0; i < n; i++) {
		uint32_t s = 16 + (uint32_t)(rnd() % 113);
		blk[i] = malloc(s);
		if (!blk[i]) return 2;
		memset(blk[i], (int)(i & 0xff), s);
		sz[i] = s;
		add(s);
	}
	size_t target = peak;
	/* phase 2: free a random 90% */
	for (size_t i = 0; i < n; i++) {
		if (rnd() % 10 != 0) {
			if (blk[i][0] != (unsigned char)(i & 0xff) || blk[i][sz[i] - 1] != (unsigned char)(i & 0xff)) {
				fprintf(stderr, "frag: corrupted block\n");
				return 2;
			}
			h = (h ^ (blk[i][0] + sz[i])) * 0x100000001b3ull;
			free(blk[i]);
			live -= sz[i];
			blk[i] = NULL;
		}
	}
	/* phase 3: larger blocks until live is back at the peak */
	size_t m = n;
	while (m < cap) {
		uint32_t s = 256 + (uint32_t)(rnd() % 1793);
		if (live + s > target) break;
		blk[m] = malloc(s);
		if (!blk[m]) return 2;
		memset(blk[m], (int)(m & 0xff), s);
		sz[m] = s;
		add(s);
		m++;
	}
	for (size_t i = 0; i < m; i++) {
		if (!blk[i]) continue;
		h = (h ^ (blk[i][sz[i] / 2] + sz[i])) * 0x100000001b3ull;
		free(blk[i]);
	}
	free(blk);
	free(sz);
	printf("frag small=%zu large=%zu peak_live=%zu checksum=%016llx\n", n, m - n, peak,
	       (unsigned long long)h);
	return 0;
}
