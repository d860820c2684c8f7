/* bigheap.c - for compare.sh's scan-speed line (not part of the corpus: no EXPECT line): builds a
 * heap of MiB mebibytes (argument, default 1024) of 4 KiB blocks, all reachable from a global
 * array, each filled with words that look like heap pointers every 8th word and random data
 * otherwise, and one lost block (none with a second argument "noleak": then the exit check has
 * nothing to symbolise or print, and its time is the scan's); prints the wall clock (CLOCK_REALTIME, seconds) just before
 * returning (the array of blocks is a global: reachable after main returns), so that the time the exit check takes can be measured from outside.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

uintptr_t **blocks;                 /* a global: reachable after main returns */

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
	size_t n = mib * 256, words = 4096 / sizeof(uintptr_t);
	blocks = malloc(n * sizeof *blocks);
	if (!blocks) return 2;
	unsigned long x = 88172645463325252ul;
	for (size_t i = 0; i < n; i++) {
		blocks[i] = malloc(4096);
		if (!blocks[i]) return 2;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t w = 0; w < words; w++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			blocks[i][w] = (w % 8 == 0) ? (uintptr_t)blocks[x % n] + (x >> 40) % 4096 : x;
		}
	if (!(argc > 2 && strcmp(argv[2], "noleak") == 0) && !malloc(100)) return 2;   /* the one leak */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(stderr, "bigheap: %zu MiB built, returning at %ld.%09ld\n", mib, (long)ts.tv_sec, ts.tv_nsec);
	return 0;
}
