/* direct.c - one block of 50 bytes whose only pointer is dropped: a direct leak.
 * EXPECT: direct=50/1 indirect=0/0
 * STACK: leak_direct main
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

static NOINLINE void leak_direct(void)
{
	char *p = malloc(50);
	KEEP(p);
	p[0] = 1;
}

int main(void)
{
	leak_direct();
	scrub_stack();
	return 0;
}
