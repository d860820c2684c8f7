// t-limit-cxx.cc - run with CONTIG_LIMIT=64M: operator new past the limit throws std::bad_alloc
// (nothrow new returns nullptr), the program keeps running, and deleting makes room again.
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

int main()
{
	std::vector<char *> v;
	v.reserve(10000);
	bool thrown = false;
	try {
		for (int i = 0; i < 10000; i++) {
			char *p = new char[1 << 20];
			std::memset(p, 1, 1 << 20);
			v.push_back(p);
		}
	} catch (const std::bad_alloc &) {
		thrown = true;
	}
	std::printf("t-limit-cxx: %zu MiB before %s\n", v.size(), thrown ? "std::bad_alloc" : "the end");
	if (!thrown || v.size() < 48 || v.size() > 64) {
		std::fprintf(stderr, "FAIL: new did not throw std::bad_alloc near the 64 MiB limit (%zu MiB)\n", v.size());
		return 1;
	}
	char *q = new (std::nothrow) char[8 << 20];
	if (q != nullptr) {
		std::fprintf(stderr, "FAIL: nothrow new at the limit returned %p\n", static_cast<void *>(q));
		return 1;
	}
	for (char *p : v)
		delete[] p;
	v.clear();
	try {
		char *p = new char[32 << 20];
		std::memset(p, 2, 32 << 20);
		delete[] p;
	} catch (const std::bad_alloc &) {
		std::fprintf(stderr, "FAIL: new still throws after everything was deleted\n");
		return 1;
	}
	std::printf("t-limit-cxx: room again after delete\n");
	return 0;
}
