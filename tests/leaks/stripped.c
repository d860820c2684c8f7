/* stripped.c - a stripped program (no .symtab, no debug information, no frame pointers) that
 * exports one function (-rdynamic): the static functions that leak must come out unnamed, as
 * (MODULE+0xOFFSET), not under the name of the exported function that lies before them in .text
 * (what the nearest-symbol answer of dladdr and of addr2line on a stripped file gives).
 * EXPECT: direct=555/1 indirect=0/0
 * STACK: ? ? main
 * BUILD: -O2 -fomit-frame-pointer -g0 -rdynamic -s
 */
#include <stdlib.h>
#include "corpus.h"

static char *volatile sink;

NOINLINE void stripped_exported(size_t n)
{
	sink = malloc(n);
	free(sink);
	sink = NULL;
}

static NOINLINE void stripped_leaf(size_t n)
{
	char *p = malloc(n);
	KEEP(p);
	KEEP(n);
}

static NOINLINE void stripped_middle(size_t n)
{
	stripped_leaf(n);
	KEEP(n);
}

int main(void)
{
	stripped_exported(16);
	stripped_middle(555);
	scrub_stack();
	return 0;
}
