/* global.c - blocks held only by globals (a plain pointer, a static array of pointers, a
 * pointer in read-mostly data): reachable, not leaks.
 * EXPECT: direct=0/0 indirect=0/0
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

void *held;
static void *table[16];
void *const *volatile ro = &held;

static NOINLINE void fill(void)
{
	held = malloc(1000);
	for (int i = 0; i < 16; i++) table[i] = malloc((size_t)(i + 1) * 100);
	KEEP(table);
}

int main(void)
{
	fill();
	scrub_stack();
	return *ro == NULL;
}
