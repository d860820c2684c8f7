/* cxxclean.cc - C++ that keeps everything reachable to the end: a global map of strings to
 * vectors, a static unique_ptr, a function-local static, iostream output: no leak.
 * EXPECT: direct=0/0 indirect=0/0
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include "corpus.h"

std::map<std::string, std::vector<int>> table;
static std::unique_ptr<std::string> owned;

static std::vector<std::string> &names()
{
	static std::vector<std::string> *v = new std::vector<std::string>();   // never deleted: reachable
	return *v;
}

int main()
{
	for (int i = 0; i < 200; i++)
		table["key number " + std::to_string(i)].assign((size_t)i, i);
	owned.reset(new std::string(1000, 'x'));
	for (int i = 0; i < 50; i++) names().push_back(std::string(40, (char)('a' + i % 26)));
	std::cout << "entries " << table.size() << "\n";
	scrub_stack();
	return 0;
}
