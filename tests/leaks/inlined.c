/* inlined.c - a leak made in a static inline function the compiler inlined into its caller: the
 * report names both, the inlined one first and its caller at the same address (as LeakSanitizer
 * does), so a suppression naming the caller matches (it was never shown).
 * EXPECT: direct=123/1 indirect=0/0
 * STACK: make_buf load_config main
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <stdlib.h>
#include "corpus.h"

void *volatile sink;

static inline void *make_buf(size_t n)
{
	return malloc(n);
}

NOINLINE void load_config(void);
NOINLINE void load_config(void)
{
	char *p = make_buf(123);
	p[0] = 1;
	sink = p;
	sink = NULL;
}

int main(void)
{
	load_config();
	scrub_stack();
	return 0;
}
