/* realloc.c - a block grown and shrunk by realloc through 16, 100, 1000, 50000 and 300 bytes,
 * then lost: one leak of 300 bytes, allocated (last) by leak_realloc. A second chain kept in a
 * global is no leak.
 * EXPECT: direct=300/1 indirect=0/0
 * STACK: leak_realloc main
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

void *kept;

static NOINLINE void *grow(void *p, size_t n) { p = realloc(p, n); KEEP(p); return p; }

static NOINLINE void leak_realloc(void)
{
	char *p = malloc(16);
	p = grow(p, 100);
	p = grow(p, 1000);
	p = grow(p, 50000);
	p = realloc(p, 300);
	KEEP(p);
	p[299] = 1;
}

int main(void)
{
	kept = malloc(10);
	kept = grow(kept, 70000);
	kept = grow(kept, 20);
	leak_realloc();
	scrub_stack();
	return kept == NULL;
}
