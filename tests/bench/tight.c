/* tight: the tightest loop there is: malloc(64), write it, free it, 40M
 * times at scale 1 in one thread.  Measures the allocator's fast path alone
 * (a thread cache that hands the same block back every time).  The pointer
 * goes through a volatile variable so the compiler cannot drop the pair.
 * Usage: tight [scale]   Prints one deterministic checksum line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SIZE 64

static void *volatile sink;

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	long ops = (long)(40e6 * scale);
	if (ops < 1000) ops = 1000;
	uint64_t h = 0;
	for (long n = 0; n < ops; n++) {
		unsigned char *p = malloc(SIZE);
		if (!p) { fprintf(stderr, "tight: malloc failed\n"); return 2; }
		p[0] = (unsigned char)n;
		p[SIZE - 1] = (unsigned char)(n >> 8);
		sink = p;
		p = sink;
		h += p[0] + p[SIZE - 1];
		free(p);
	}
	printf("tight ops=%ld size=%d checksum=%016llx\n", ops, SIZE, (unsigned long long)h);
	return 0;
}
