/* deep.c - a leak 30 calls deep (deeper than the 16 frames kept): the report still starts at the
 * allocating function; blocks from recursion kept in a global are not leaks.
 * EXPECT: direct=1234/1 indirect=0/0
 * STACK: deep_alloc recurse recurse recurse
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

void *kept;

static NOINLINE void deep_alloc(void) { char *p = malloc(1234); KEEP(p); kept = malloc(10); }

static NOINLINE int recurse(int n)
{
	if (n == 0) deep_alloc();
	else recurse(n - 1);
	KEEP(n);
	return n;
}

int main(void)
{
	recurse(30);
	scrub_stack();
	return kept == NULL;
}
