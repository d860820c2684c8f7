/* newarr.cc - C++: new[] of 25 ints (100 bytes) and a nothrow new of 16 bytes, both lost;
 * frames from operator new[] / new(nothrow) are skipped.
 * EXPECT: direct=116/2 indirect=0/0
 * STACK: leak_array main
 * STACK: leak_nothrow main
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include <new>
#include "corpus.h"

struct Pair { long a, b; };

static NOINLINE void leak_array() { int *a = new int[25]; a[24] = 1; KEEP(a); }
static NOINLINE void leak_nothrow() { Pair *p = new (std::nothrow) Pair; KEEP(p); }

int main()
{
	leak_array();
	leak_nothrow();
	scrub_stack();
	return 0;
}
