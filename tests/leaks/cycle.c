/* cycle.c - three blocks of 40 bytes pointing at each other in a ring, none reachable: every one
 * is pointed to by another leaked block, so all three are indirect leaks (none is direct).
 * EXPECT: direct=0/0 indirect=120/3
 * STACK: make_ring main
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

struct ring { struct ring *next; char pad[32]; };

static NOINLINE void make_ring(void)
{
	struct ring *a = malloc(sizeof *a), *b = malloc(sizeof *b), *c = malloc(sizeof *c);
	a->next = b;
	b->next = c;
	c->next = a;
	KEEP(a);
}

int main(void)
{
	make_ring();
	scrub_stack();
	return 0;
}
