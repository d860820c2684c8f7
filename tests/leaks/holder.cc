/* holder.cc - C++: a Holder (48 bytes: a std::vector<int> and a 24-byte name) made with new and
 * lost; its vector's 40-byte buffer is reachable only from it: one direct and one indirect
 * leak. Frame #0 is the function that called new, not operator new.
 * EXPECT: direct=48/1 indirect=40/1
 * STACK: make_holder main
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <vector>
#include "corpus.h"

struct Holder {
	std::vector<int> v;
	char name[24];
};

static NOINLINE void make_holder()
{
	Holder *h = new Holder;
	h->v.resize(10);
	h->name[0] = 0;
	KEEP(h);
}

int main()
{
	make_holder();
	scrub_stack();
	return 0;
}
