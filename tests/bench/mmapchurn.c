/* mmapchurn: anonymous mmap/munmap churn.
 * 64 slots replaced at random with private anonymous read/write mappings of
 * 4 KiB .. 1 MiB (log-uniform page counts); every page of a new mapping is
 * written; before a mapping goes, its first and last pages are checked.  One
 * removal in four unmaps the upper half first and then the rest, exercising
 * partial munmap.  10000 ops at scale 1.  No malloc in the loop: this
 * measures how the mapping calls are served (libcontig serves them from its
 * range under CONTIG_MMAP=1).
 * Usage: mmapchurn [scale]   Prints one deterministic checksum line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define SLOTS 64
#define PAGE 4096

static uint64_t rng = 0x3c6ef372fe94f82bull;
static inline uint64_t rnd(void)
{
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	long ops = (long)(10000 * scale);
	if (ops < 200) ops = 200;
	uint64_t *slot[SLOTS] = { 0 };
	size_t pages[SLOTS];
	uint64_t h = 0;
	for (long n = 0; n <= ops; n++) {
		uint64_t r = rnd();
		unsigned i = (unsigned)((r >> 40) % SLOTS);
		for (unsigned k = 0; k < SLOTS; k++) {
			if (n == ops) i = k;            /* last round: release everything */
			uint64_t *p = slot[i];
			if (p) {
				size_t np = pages[i];
				uint64_t *lastp = (uint64_t *)((char *)p + (np - 1) * PAGE);
				if (p[0] != (uint64_t)p[1] * 3 || (np > 1 && lastp[0] != p[1] + np - 1)) {
					fprintf(stderr, "mmapchurn: corrupted mapping\n");
					return 2;
				}
				h = (h ^ (p[1] + np)) * 0x100000001b3ull;
				if (np >= 2 && (r & 3) == 0) {
					size_t lo = np / 2;
					if (munmap((char *)p + lo * PAGE, (np - lo) * PAGE) ||
					    munmap(p, lo * PAGE)) { perror("munmap"); return 2; }
				} else if (munmap(p, np * PAGE)) { perror("munmap"); return 2; }
				slot[i] = NULL;
			}
			if (n < ops) break;
		}
		if (n == ops) break;
		unsigned e = (unsigned)(r % 9);                 /* 1 .. 256 pages */
		size_t np = ((size_t)1 << e) + (rnd() % ((size_t)1 << e));
		if (np > 256) np = 256;
		uint64_t *p = mmap(NULL, np * PAGE, PROT_READ | PROT_WRITE,
		                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) { perror("mmap"); return 2; }
		uint64_t v = (uint64_t)n * 1000003;
		for (size_t k = 0; k < np; k++) *(uint64_t *)((char *)p + k * PAGE) = v + k;
		p[1] = v;               /* page 0 word 0 = 3v (overwrites v+0), word 1 = v */
		p[0] = v * 3;
		slot[i] = p;
		pages[i] = np;
	}
	printf("mmapchurn ops=%ld checksum=%016llx\n", ops, (unsigned long long)h);
	return 0;
}
