/* direct-o2.c - a direct leak three calls deep in a program built without frame pointers: the
 * stack must still unwind (DWARF CFI) through inner, outer and main.
 * EXPECT: direct=4000/2 indirect=0/0
 * STACK: leak_inner leak_outer main
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

static NOINLINE void leak_inner(int n)
{
	char *p = malloc((size_t)n);
	KEEP(p);
	if (p) p[0] = 1;
	KEEP(n);
}

static NOINLINE void leak_outer(int n)
{
	leak_inner(n);
	leak_inner(n);
	KEEP(n);
}

int main(void)
{
	leak_outer(2000);
	scrub_stack();
	return 0;
}
