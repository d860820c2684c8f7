/* nodebug.c - no debug information and no frame pointers: the frames must still unwind (CFI in
 * .eh_frame) and name the static functions from the symbol table.
 * EXPECT: direct=777/1 indirect=0/0
 * STACK: nodebug_leaf nodebug_middle main
 * BUILD: -O2 -fomit-frame-pointer -g0
 */
#include <stdlib.h>
#include "corpus.h"

static NOINLINE void nodebug_leaf(size_t n)
{
	char *p = malloc(n);
	KEEP(p);
	KEEP(n);
}

static NOINLINE void nodebug_middle(size_t n)
{
	nodebug_leaf(n);
	KEEP(n);
}

int main(void)
{
	nodebug_middle(777);
	scrub_stack();
	return 0;
}
