/* heapheld.c - a chain global -> A -> B -> C of heap blocks: B and C are reachable only through
 * other heap blocks, which are reachable: no leak.
 * EXPECT: direct=0/0 indirect=0/0
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

struct box { struct box *inner; char pad[56]; };
struct box *root;

static NOINLINE void nest(void)
{
	struct box *a = malloc(sizeof *a), *b = malloc(sizeof *b), *c = malloc(sizeof *c);
	c->inner = NULL;
	b->inner = c;
	a->inner = b;
	root = a;
}

int main(void)
{
	nest();
	scrub_stack();
	return root->inner->inner == NULL;
}
