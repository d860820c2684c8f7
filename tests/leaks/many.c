/* many.c - 100,000 small leaks of 24 bytes from one call site (one group), and 1000 reachable
 * blocks kept in a global array.
 * EXPECT: direct=2400000/100000 indirect=0/0
 * STACK: leak_many main
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

void *kept[1000];

static NOINLINE void leak_many(int n)
{
	for (int i = 0; i < n; i++) {
		char *p = malloc(24);
		KEEP(p);
	}
}

int main(void)
{
	for (int i = 0; i < 1000; i++) kept[i] = malloc(24);
	leak_many(100000);
	scrub_stack();
	return kept[999] == NULL;
}
