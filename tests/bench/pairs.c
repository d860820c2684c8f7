/* pairs: the cost of one malloc/free pair, for instruction counts under callgrind.
 * 64 live slots; each step frees a random slot and refills it with a block of a random size,
 * 16..496 B. Not a scripts/bench workload: count it as docs/design.md ("The budget") says,
 * the difference between two runs, so start-up and exit cancel out.
 * Usage: pairs [steps]   (default 1000000) Prints one checksum line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SLOTS 64

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static inline uint64_t rnd(void)
{
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	long steps = argc > 1 ? atol(argv[1]) : 1000000;
	static void *slot[SLOTS];
	uintptr_t h = 0;
	for (long n = 0; n < steps; n++) {
		uint64_t r = rnd();
		unsigned i = (unsigned)(r & (SLOTS - 1));
		free(slot[i]);
		slot[i] = malloc(16 + (size_t)((r >> 8) % 481));
		h += (uintptr_t)slot[i] & 0xfff;
	}
	for (unsigned i = 0; i < SLOTS; i++) free(slot[i]);
	printf("pairs %ld %lu\n", steps, (unsigned long)h);
	return 0;
}
