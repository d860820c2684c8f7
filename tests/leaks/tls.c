/* tls.c - blocks held only by thread-local variables of the main thread (initial-exec and
 * general-dynamic): reachable, not leaks.
 * EXPECT: direct=0/0 indirect=0/0
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

__thread void *tls_held;
static __thread void *tls_other[4];

static NOINLINE void fill(void)
{
	tls_held = malloc(300);
	for (int i = 0; i < 4; i++) tls_other[i] = malloc(48);
}

int main(void)
{
	fill();
	scrub_stack();
	return tls_held == NULL || tls_other[3] == NULL;
}
