// t-cxx.cc - C++ under libcontig: containers, strings, exceptions (allocated by libstdc++ with
// malloc), over-aligned, sized, array and nothrow new; every address checked in range.
// Run under LD_PRELOAD.
#include "testutil.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#define CHECK_IN(p, len, what) CHECK_RANGE(static_cast<const void *>(p), (len), (what))

struct alignas(64) line_t {
	unsigned char b[64];
};

struct alignas(4096) page_t {
	unsigned char b[4096];
	int tag;
};

struct my_error : std::runtime_error {
	std::vector<int> payload;
	explicit my_error(const std::string &s) : std::runtime_error(s), payload(100, 7) {}
};

static void containers()
{
	std::vector<std::string> words;
	std::map<int, std::string> ordered;
	std::unordered_map<std::string, std::vector<long>> hashed;
	std::vector<long> big;

	for (int i = 0; i < 50000; i++) {
		std::string w = "word-" + std::to_string(i) + std::string(i % 40, 'x');
		words.push_back(w);
		ordered[i * 7] = w;
		hashed[w].push_back(i);
		if (i % 1000 == 0) {
			CHECK_IN(words.data(), words.capacity() * sizeof(std::string), "vector storage");
			CHECK_IN(words.back().data(), words.back().capacity(), "string storage");
			auto it = ordered.find(i * 7);
			CHECK_IN(&*it, sizeof *it, "map node");
			auto h = hashed.find(w);
			CHECK_IN(&*h, sizeof *h, "unordered_map node");
			CHECK_IN(h->second.data(), sizeof(long), "vector in unordered_map");
		}
	}
	for (long i = 0; i < (1 << 22); i++)   // 32 MiB of storage, grown by doubling
		big.push_back(i);
	CHECK_IN(big.data(), big.size() * sizeof(long), "large vector storage");
	for (long i = 0; i < (1 << 22); i += 4099)
		CHECK(big[i] == i, "large vector lost element %ld", i);

	long sum = 0;
	for (auto &kv : ordered)
		sum += static_cast<long>(kv.second.size());
	CHECK(sum > 0 && ordered.size() == 50000 && hashed.size() == 50000, "container sizes wrong");
	for (int i = 0; i < 50000; i += 2)
		ordered.erase(i * 7);
	words.erase(words.begin(), words.begin() + 25000);
	words.shrink_to_fit();
	CHECK_IN(words.data(), words.size() * sizeof(std::string), "shrunk vector storage");
	CHECK(words.front() == "word-25000" + std::string(25000 % 40, 'x'), "vector contents wrong");
}

static void *volatile sink;

static void exceptions()
{
	int caught = 0;

	for (int i = 0; i < 2000; i++) {
		try {
			if (i % 3 == 0)
				throw my_error("custom error number " + std::to_string(i) + std::string(200, 'e'));
			else if (i % 3 == 1)
				throw std::runtime_error(std::string(i % 500 + 1, 'r'));
			else
				throw i;
		} catch (const my_error &e) {
			CHECK_IN(&e, sizeof e, "exception object (my_error)");
			CHECK_IN(e.payload.data(), 100 * sizeof(int), "exception payload");
			caught++;
		} catch (const std::runtime_error &e) {
			CHECK_IN(&e, sizeof e, "exception object (runtime_error)");
			CHECK(std::strlen(e.what()) == static_cast<size_t>(i % 500 + 1), "what() wrong");
			caught++;
		} catch (const int &v) {
			CHECK_IN(&v, sizeof v, "exception object (int)");
			CHECK(v == i, "caught %d, expected %d", v, i);
			caught++;
		}
	}
	CHECK(caught == 2000, "caught %d exceptions of 2000", caught);

	// A failed throwing new raises bad_alloc; nothrow new returns nullptr.
	bool got_bad_alloc = false;
	try {
		volatile size_t huge = static_cast<size_t>(-1) / 2;
		sink = ::operator new[](huge);   // a new-expression could be elided; the call cannot
		::operator delete[](const_cast<void *>(sink));
	} catch (const std::bad_alloc &e) {
		got_bad_alloc = true;
	}
	CHECK(got_bad_alloc, "new char[SIZE_MAX/2] did not throw bad_alloc");
	volatile size_t huge = static_cast<size_t>(-1) / 2;
	sink = ::operator new[](huge, std::nothrow);
	CHECK(sink == nullptr, "nothrow new[SIZE_MAX/2] returned %p", const_cast<void *>(sink));

	// The aligned forms with a size near SIZE_MAX: libstdc++'s own operator rounds it up to the
	// alignment, which wraps into a tiny size, and glibc hands out a block of that; never here.
	for (size_t al : { static_cast<size_t>(16), static_cast<size_t>(4096), static_cast<size_t>(1) << 20 }) {
		volatile size_t near = static_cast<size_t>(-1) - al / 2;
		got_bad_alloc = false;
		try {
			sink = ::operator new(near, std::align_val_t(al));
			::operator delete(const_cast<void *>(sink), std::align_val_t(al));
		} catch (const std::bad_alloc &e) {
			got_bad_alloc = true;
		}
		CHECK(got_bad_alloc, "aligned new(SIZE_MAX - %zu, %zu) did not throw bad_alloc", al / 2, al);
		sink = ::operator new[](near, std::align_val_t(al), std::nothrow);
		CHECK(sink == nullptr, "nothrow aligned new[](SIZE_MAX - %zu, %zu) returned %p", al / 2, al,
		      const_cast<void *>(sink));
	}
}

static void new_forms()
{
	// Plain, array, nothrow, sized delete (the compiler passes the size for these).
	for (int i = 0; i < 1000; i++) {
		long *one = new long(i);
		CHECK_IN(one, sizeof *one, "new long");
		delete one;
		int *arr = new int[i + 1];
		CHECK_IN(arr, (i + 1) * sizeof(int), "new int[]");
		delete[] arr;
		std::string *s = new (std::nothrow) std::string(i, 'n');
		CHECK(s != nullptr, "nothrow new returned nullptr");
		CHECK_IN(s, sizeof *s, "nothrow new");
		delete s;
		double *d = new (std::nothrow) double[i + 1];
		CHECK(d != nullptr, "nothrow new[] returned nullptr");
		CHECK_IN(d, (i + 1) * sizeof(double), "nothrow new[]");
		delete[] d;
	}
	// Over-aligned types: operator new(size_t, align_val_t) and the matching deletes.
	for (int i = 0; i < 300; i++) {
		line_t *l = new line_t;
		CHECK(reinterpret_cast<uintptr_t>(l) % 64 == 0, "new line_t = %p not 64-aligned",
		      static_cast<void *>(l));
		CHECK_IN(l, sizeof *l, "new alignas(64)");
		std::memset(l->b, 1, sizeof l->b);
		delete l;
		page_t *pg = new page_t;
		CHECK(reinterpret_cast<uintptr_t>(pg) % 4096 == 0, "new page_t = %p not 4096-aligned",
		      static_cast<void *>(pg));
		CHECK_IN(pg, sizeof *pg, "new alignas(4096)");
		pg->tag = i;
		delete pg;
		page_t *pa = new page_t[3];
		CHECK(reinterpret_cast<uintptr_t>(pa) % 4096 == 0, "new page_t[3] = %p not aligned",
		      static_cast<void *>(pa));
		CHECK_IN(pa, 3 * sizeof *pa, "new alignas(4096)[]");
		pa[2].tag = i;
		delete[] pa;
		line_t *ln = new (std::nothrow) line_t[i + 1];
		CHECK(ln != nullptr && reinterpret_cast<uintptr_t>(ln) % 64 == 0,
		      "nothrow new line_t[] = %p", static_cast<void *>(ln));
		CHECK_IN(ln, (i + 1) * sizeof *ln, "nothrow new alignas(64)[]");
		delete[] ln;
	}
	// The operators called directly, in every form.
	for (size_t n = 1; n <= (size_t(1) << 24); n *= 4) {
		void *p = ::operator new(n);
		CHECK_IN(p, n, "operator new");
		std::memset(p, 2, n);
		::operator delete(p, n);
		p = ::operator new[](n);
		CHECK_IN(p, n, "operator new[]");
		::operator delete[](p, n);
		for (size_t al = 16; al <= 65536; al *= 16) {
			p = ::operator new(n, std::align_val_t(al));
			CHECK(reinterpret_cast<uintptr_t>(p) % al == 0, "operator new(%zu, align %zu) = %p",
			      n, al, p);
			CHECK_IN(p, n, "operator new(align_val_t)");
			std::memset(p, 3, n);
			::operator delete(p, n, std::align_val_t(al));
			p = ::operator new[](n, std::align_val_t(al), std::nothrow);
			CHECK(p != nullptr && reinterpret_cast<uintptr_t>(p) % al == 0,
			      "operator new[](%zu, align %zu, nothrow) = %p", n, al, p);
			CHECK_IN(p, n, "operator new[](align_val_t, nothrow)");
			::operator delete[](p, std::align_val_t(al));
		}
	}
	auto sp = std::make_shared<std::vector<int>>(1000, 1);
	CHECK_IN(sp.get(), sizeof *sp, "make_shared");
	auto up = std::make_unique<page_t>();
	CHECK_IN(up.get(), sizeof *up, "make_unique alignas(4096)");
}

static int handler_calls;
static void counting_handler()
{
	if (++handler_calls == 3)
		std::set_new_handler(nullptr);   // the next failure throws
}

// operator new comes from the library itself, and a failure still runs the new_handler loop
// before it throws bad_alloc (or, for nothrow new, returns nullptr).
static void new_handler_semantics()
{
	Dl_info info;
	void *(*op)(size_t) = &::operator new;
	const char *np = std::getenv("CONTIG_TEST_NO_PRELOAD");
	if (np == nullptr || std::strcmp(np, "1") != 0) {
		CHECK(dladdr(reinterpret_cast<void *>(op), &info) && info.dli_fname &&
		      std::strstr(info.dli_fname, "libcontig"),
		      "operator new is not the library's (it comes from %s)", info.dli_fname);
	}
	volatile size_t huge = static_cast<size_t>(-1) / 2;
	bool threw = false;
	std::set_new_handler(counting_handler);
	try {
		sink = ::operator new(huge);
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	CHECK(threw && handler_calls == 3, "failed new: bad_alloc %d after %d handler calls, expected 3",
	      threw, handler_calls);
	handler_calls = 0;
	std::set_new_handler(counting_handler);
	sink = ::operator new(huge, std::align_val_t(64), std::nothrow);
	CHECK(sink == nullptr && handler_calls == 3, "failed nothrow aligned new: %p after %d handler calls",
	      const_cast<void *>(sink), handler_calls);
	std::set_new_handler(nullptr);
}

// Delete a block of n bytes twice with the sized operator; the library must abort at the second.
static int double_delete(size_t n, const char *what)
{
	static void *volatile held;   // (volatile: the compiler would flag the second delete)
	held = ::operator new(n);
	::operator delete(held, n);
	std::printf("ptr %p\n", held);
	std::fflush(stdout);
	::operator delete(held, n);
	std::printf("survived %s\n", what);
	return 0;
}

int main(int argc, char **argv)
{
	tu_init();
	if (argc > 1 && std::strcmp(argv[1], "delete-wrong-size") == 0) {
		// sized delete with a size larger than the block: the library must abort
		void *p = ::operator new(100);
		volatile size_t n = 100000;
		std::printf("ptr %p\n", p);
		std::fflush(stdout);
		::operator delete(p, n);
		std::printf("survived delete-wrong-size\n");
		return 0;
	}
	if (argc > 1 && std::strcmp(argv[1], "delete-wrong-size-large") == 0) {
		void *p = ::operator new(300000);
		volatile size_t n = 400000;
		std::printf("ptr %p\n", p);
		std::fflush(stdout);
		::operator delete(p, n);
		std::printf("survived delete-wrong-size-large\n");
		return 0;
	}
	// a second sized delete of a small block (through delete's fast path) or of a large one:
	// "free(): invalid pointer", as free says
	if (argc > 1 && std::strcmp(argv[1], "double-delete-small") == 0) return double_delete(48, argv[1]);
	if (argc > 1 && std::strcmp(argv[1], "double-delete-large") == 0) return double_delete(300000, argv[1]);
	new_handler_semantics();
	containers();
	exceptions();
	new_forms();
	std::printf("t-cxx: ok\n");
	return 0;
}
