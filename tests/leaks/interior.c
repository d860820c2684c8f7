/* interior.c - a 200-byte block whose only pointer points into its middle (p + 100): a
 * conservative scan counts interior pointers, so it is reachable, not a leak.
 * EXPECT: direct=0/0 indirect=0/0
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

char *middle;

static NOINLINE void keep_middle(void)
{
	char *p = malloc(200);
	middle = p + 100;
	KEEP(p);
}

int main(void)
{
	keep_middle();
	scrub_stack();
	return middle == NULL;
}
