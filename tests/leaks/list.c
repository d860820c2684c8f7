/* list.c - a list of 10 nodes of 32 bytes whose head pointer is lost: the head is a direct leak,
 * the 9 nodes it leads to are indirect.
 * EXPECT: direct=32/1 indirect=288/9
 * STACK: build_list main
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

struct node { struct node *next; char pad[24]; };

static NOINLINE void build_list(void)
{
	struct node *head = NULL;
	for (int i = 0; i < 10; i++) {
		struct node *n = malloc(sizeof *n);
		n->next = head;
		head = n;
	}
	KEEP(head);
}

int main(void)
{
	build_list();
	scrub_stack();
	return 0;
}
