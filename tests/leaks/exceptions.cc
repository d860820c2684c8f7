/* exceptions.cc - C++ exceptions while stacks are captured: 2000 throws (each allocates its
 * exception object with malloc, and destructors allocate while the unwinder runs), all caught;
 * one 72-byte object made in a catch block and lost: the only leak.
 * EXPECT: direct=72/1 indirect=0/0
 * STACK: leak_in_catch main
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <stdexcept>
#include <string>
#include <vector>
#include "corpus.h"

struct Noisy {
	std::vector<int> v;
	Noisy() : v(16, 1) {}
	~Noisy() { std::vector<int> w(8, 2); KEEP(w.data()); }   // allocates during unwinding
};
struct Blob { char bytes[72]; };

static NOINLINE void thrower(int i)
{
	Noisy n;
	if (i >= 0) throw std::runtime_error("failure number " + std::to_string(i) + " with a long message");
}

static NOINLINE void leak_in_catch(int i)
{
	try {
		thrower(i);
	} catch (const std::exception &e) {
		if (i == 1000) { Blob *b = new Blob; b->bytes[0] = e.what()[0]; KEEP(b); }
	}
}

int main()
{
	for (int i = 0; i < 2000; i++) leak_in_catch(i);
	scrub_stack();
	return 0;
}
