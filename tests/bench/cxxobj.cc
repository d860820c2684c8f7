/* cxxobj: a C++ program's object churn, through operator new and the sized
 * operator delete that C++14 code calls (never malloc directly).
 * An index of 20000 entries, std::unordered_map from std::string keys to
 * std::unique_ptr<Node>; each Node holds a std::string name, a
 * std::vector<int> of 0..24 elements built by push_back (so it grows through
 * several sizes) and a std::shared_ptr<Tag> shared by many nodes.  Each op
 * replaces a random entry (its node, key, name and vector are freed), and
 * every 64 ops a std::map<int, std::string> of 200 entries is built and torn
 * down.  500000 ops at scale 1.
 * Usage: cxxobj [scale]   Prints one deterministic checksum line. */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

static uint64_t rng = 0xbb67ae8584caa73bull;
static inline uint64_t rnd()
{
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return rng;
}

struct Tag {
	std::string label;
	explicit Tag(uint64_t k) : label("tag-" + std::to_string(k)) {}
};

struct Node {
	std::string name;
	std::vector<int> values;
	std::shared_ptr<Tag> tag;
	Node(uint64_t k, std::shared_ptr<Tag> t) : name("node/" + std::to_string(k) + "/payload"), tag(std::move(t))
	{
		unsigned n = (unsigned)(k % 25);
		for (unsigned i = 0; i < n; i++) values.push_back((int)(k + i));
	}
	uint64_t sum() const
	{
		uint64_t s = name.size() + tag->label.size();
		for (int v : values) s += (unsigned)v;
		return s;
	}
};

int main(int argc, char **argv)
{
	double scale = argc > 1 ? std::atof(argv[1]) : 1.0;
	long ops = (long)(500000 * scale);
	if (ops < 1000) ops = 1000;
	const unsigned keys = 20000;
	std::vector<std::shared_ptr<Tag>> tags;
	for (unsigned i = 0; i < 64; i++) tags.push_back(std::make_shared<Tag>(i));
	std::unordered_map<std::string, std::unique_ptr<Node>> index;
	uint64_t h = 0;
	for (long op = 0; op < ops; op++) {
		uint64_t r = rnd();
		std::string key = "k" + std::to_string(r % keys);
		auto &slot = index[key];
		if (slot) h = (h ^ slot->sum()) * 0x100000001b3ull;
		slot = std::make_unique<Node>(r >> 20, tags[(r >> 8) & 63]);
		if ((op & 63) == 63) {
			std::map<int, std::string> m;
			for (int i = 0; i < 200; i++) m[(int)((r >> 3) + (uint64_t)i * 7919) % 1000] = std::to_string(i);
			h = (h ^ m.size() ^ m.begin()->second.size()) * 0x100000001b3ull;
		}
	}
	for (auto &kv : index) h = (h ^ kv.second->sum()) * 0x100000001b3ull;
	std::printf("cxxobj ops=%ld entries=%zu checksum=%016llx\n", ops, index.size(), (unsigned long long)h);
	return 0;
}
