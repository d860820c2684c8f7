/* mmapheld.c - a block whose only pointer is stored in memory the program got from mmap
 * (private anonymous, read-write): that memory is the program's and is a root: no leak.
 * EXPECT: direct=0/0 indirect=0/0
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include <stdlib.h>
#include <sys/mman.h>
#include "corpus.h"

void **area;

static NOINLINE void store(void)
{
	area = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED) exit(2);
	area[1000] = malloc(500);
}

int main(void)
{
	store();
	scrub_stack();
	return area[1000] == NULL;
}
