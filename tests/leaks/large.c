/* large.c - large and aligned blocks: 1 MiB from malloc, 8 KiB from aligned_alloc(4096) and
 * 1000 bytes from posix_memalign(256) are lost; a 3 MiB block held by a global is not.
 * EXPECT: direct=1057768/3 indirect=0/0
 * STACK: leak_large main
 * STACK: leak_aligned main
 * STACK: leak_posix main
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

void *kept;

static NOINLINE void leak_large(void) { char *p = malloc(1 << 20); p[12345] = 1; KEEP(p); }
static NOINLINE void leak_aligned(void) { char *p = aligned_alloc(4096, 8192); p[1] = 1; KEEP(p); }
static NOINLINE void leak_posix(void)
{
	void *p = NULL;
	if (posix_memalign(&p, 256, 1000) != 0) exit(2);
	KEEP(p);
	p = NULL;
}

int main(void)
{
	kept = malloc(3 << 20);
	leak_large();
	leak_aligned();
	leak_posix();
	scrub_stack();
	return kept == NULL;
}
