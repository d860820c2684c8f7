/* capture-bench.c - for compare.sh: the cost of one malloc+free five calls deep (N times,
 * argument, default 1000000), in ns, so that leak mode's stack capture can be put beside a plain
 * run and LeakSanitizer's two unwinders. Built -O2 -fomit-frame-pointer like Debian's programs. */
#include <stdlib.h>
#include <stdio.h>
#include <time.h>
#define NI __attribute__((noinline))
static volatile int sink;
NI void *a5(size_t n) { void *p = malloc(n); sink++; return p; }
NI void *a4(size_t n) { void *p = a5(n); sink++; return p; }
NI void *a3(size_t n) { void *p = a4(n); sink++; return p; }
NI void *a2(size_t n) { void *p = a3(n); sink++; return p; }
NI void *a1(size_t n) { void *p = a2(n); sink++; return p; }
int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 1000000;
	struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) free(a1(32 + (i & 7) * 16));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.1f ns per malloc+free\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n);
	return 0;
}
