/* stale.c - a block that is lost while a stale copy of its address is still in memory: the
 * program frees the only block that pointed to it and gets that block's place back from the next
 * malloc of its size, writing only its first bytes. The bytes it has not written yet must not hold
 * the old pointer for the scan to follow (an allocator that reuses freed blocks at once, as this
 * one does, would otherwise hand it back and the leak would go unseen). The same with a large
 * block, whose pages come back from the free run they went to, and with a block asked smaller
 * than its place and then grown by realloc, which copies the whole old block when it moves it.
 * EXPECT: direct=88/3 indirect=0/0
 * STACK: stale_leak stale_setup main
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

static char **keep, **keep_large, **keep_moved;  /* reachable to the end: the reused blocks */

static NOINLINE void *stale_leak(void)
{
	char *p = malloc(40);
	KEEP(p);
	return p;
}

static NOINLINE void stale_setup(void)
{
	char **holder = malloc(64);
	for (int i = 0; i < 8; i++) holder[i] = NULL;
	holder[5] = stale_leak();       /* the only reference, in holder's sixth word */
	free(holder);                   /* now lost: 40 bytes */
	keep = malloc(64);              /* holder's place again; only its first word is written */
	keep[0] = NULL;
}

static NOINLINE void *stale_leak_large(void)
{
	char *p = malloc(32);
	KEEP(p);
	return p;
}

static NOINLINE void stale_setup_large(void)
{
	char **holder = malloc(200000);
	holder[0] = NULL;
	holder[1000] = stale_leak_large();  /* the only reference, 8000 bytes in */
	free(holder);
	keep_large = malloc(200000);
	keep_large[0] = NULL;
}

static NOINLINE void *stale_leak_moved(void)
{
	char *p = malloc(16);
	KEEP(p);
	return p;
}

static NOINLINE void stale_setup_moved(void)
{
	char **holder = malloc(32);
	for (int i = 0; i < 4; i++) holder[i] = NULL;
	holder[3] = stale_leak_moved();     /* the only reference, in the last word */
	free(holder);
	keep_moved = malloc(20);            /* holder's place: 20 bytes asked of 32 */
	keep_moved[0] = NULL;
	keep_moved = realloc(keep_moved, 40);
	if (keep_moved) keep_moved[1] = NULL;
}

int main(void)
{
	stale_setup();
	stale_setup_large();
	stale_setup_moved();
	scrub_stack();
	return keep == NULL || keep_large == NULL || keep_moved == NULL;
}
