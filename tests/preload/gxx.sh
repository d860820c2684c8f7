#!/bin/sh
# gxx.sh - g++ compiles and links a small C++ program (templates, the standard library) under
# the library; the program prints the expected result.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

need_cmd g++ g++
cat >"$TMPD/prog.cc" <<'CXX'
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

template <typename T> struct node {
	T value;
	std::unique_ptr<node> next;
};

template <typename T> static T sum_list(const node<T> *n)
{
	T s{};
	for (; n != nullptr; n = n->next.get())
		s += n->value;
	return s;
}

int main()
{
	std::unique_ptr<node<long>> head;
	for (long i = 1; i <= 1000; i++)
		head.reset(new node<long>{i, std::move(head)});
	std::map<std::string, int> counts;
	std::istringstream in("the quick brown fox jumps over the lazy dog the end");
	for (std::string w; in >> w;)
		counts[w]++;
	std::vector<int> v(100);
	std::iota(v.begin(), v.end(), 1);
	std::reverse(v.begin(), v.end());
	std::cout << sum_list(head.get()) << ' ' << counts["the"] << ' ' << counts.size() << ' '
	          << std::accumulate(v.begin(), v.end(), 0) << ' ' << v.front() << '\n';
	return 0;
}
CXX
run_preloaded g++ -O2 -o "$TMPD/prog" "$TMPD/prog.cc" >"$TMPD/cc.log" 2>&1 ||
	fail "g++ under the library failed (status $?): $(tail -5 "$TMPD/cc.log")"
expected="500500 3 9 5050 100"
got=$(run_preloaded "$TMPD/prog") || fail "the compiled program failed under the library"
[ "$got" = "$expected" ] || fail "the program printed '$got', expected '$expected'"
echo "ok: g++ under the library; the program prints $got"
