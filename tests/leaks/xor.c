/* xor.c - the only copy of a 64-byte block's address is kept XORed with a key in a global: no
 * word points into the block, so it is a leak (the program could recover it; a scan cannot).
 * EXPECT: direct=64/1 indirect=0/0
 * STACK: hide_pointer main
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include <stdint.h>
#include <stdlib.h>
#include "corpus.h"

#define KEY 0x5a5a5a5a5a5a5a5aull
uintptr_t hidden;

static NOINLINE void hide_pointer(void)
{
	char *p = malloc(64);
	hidden = (uintptr_t)p ^ KEY;
	p = NULL;
	KEEP(p);
}

int main(void)
{
	hide_pointer();
	scrub_stack();
	return ((hidden ^ KEY) & 15) != 0;    /* the pointer is still there, just hidden */
}
