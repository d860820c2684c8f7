/* usable.c - a program that asks malloc_usable_size for a block and keeps a pointer in the bytes it
 * was told it may use beyond those it asked for: the block pointed to is not a leak (the scan must
 * read those bytes too), while one really lost still is. Where the usable size leaves no room, the
 * pointer goes in the asked bytes, so the truth is the same under any allocator. A small block
 * and a large one.
 * EXPECT: direct=24/1 indirect=0/0
 * STACK: usable_lost main
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include "corpus.h"

static char *holder, *holder_large;     /* reachable to the end */

static NOINLINE void *usable_kept(void)
{
	void *p = malloc(50);
	KEEP(p);
	return p;
}

static NOINLINE void usable_lost(void)
{
	void *p = malloc(24);
	KEEP(p);
}

static NOINLINE void usable_setup(void)
{
	holder = malloc(20);
	memset(holder, 0, 20);
	size_t n = malloc_usable_size(holder);
	void *q = usable_kept();
	size_t at = n >= 32 ? (n - sizeof q) & ~(sizeof q - 1) : 0;    /* past the 20 asked bytes */
	memcpy(holder + at, &q, sizeof q);
	q = NULL;
	KEEP(q);
	/* the same in a large block, whose usable size is whole pages */
	holder_large = malloc(200000);
	memset(holder_large, 0, 16);
	n = malloc_usable_size(holder_large);
	q = usable_kept();
	at = n >= 200000 + sizeof q ? (n - sizeof q) & ~(sizeof q - 1) : 0;
	memcpy(holder_large + at, &q, sizeof q);
	q = NULL;
	KEEP(q);
}

int main(void)
{
	usable_setup();
	usable_lost();
	scrub_stack();
	return holder == NULL || holder_large == NULL;
}
