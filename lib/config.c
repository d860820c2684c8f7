/* config.c - the CONTIG_* environment, read once at initialisation. Never allocates; a bad value
 * never stops the program: one line names the variable, the value and what is used instead. */
#include "conf.h"
#include "fmt.h"
#include <string.h>

#define DEFAULT_BASE  ((uintptr_t)0xf800000000)
#define DEFAULT_SIZE  ((size_t)64 << 30)
#define USER_TOP      ((uintptr_t)0x7fffffff0000)   /* one past the last granule the kernel maps: its
                                                       4-level limit is 0x7ffffffff000, not 2^47 */
#define MAX_SIZE      ((size_t)64 << 40)            /* half the user address space: the descriptors
                                                       (1/1024 of it) must fit beside the range */
#define MIN_BASE      ((uintptr_t)0x10000)          /* below vm.mmap_min_addr nothing can be mapped */
#define MIN_SIZE      ((size_t)1 << 20)
#define DEFAULT_PURGE_MS 100u

void config_defaults(config_t *c)
{
	memset(c, 0, sizeof *c);
	c->base = DEFAULT_BASE;
	c->size = DEFAULT_SIZE;
	c->mode = MODE_AUTO;
	c->on_collision = COLL_SKIP;
	c->purge_ms = DEFAULT_PURGE_MS;
	c->mmap = MMAP_RW;
	c->check_maps = 1;
}

static bool is_space(char ch) { return ch == ' ' || ch == '\t'; }

/* "64G", "512m", "4096", "1T": K M G T are powers of 1024. 0 on success, -1 when not a size. */
int config_parse_size(const char *s, size_t *out)
{
	uint64_t v = 0;
	int digits = 0;
	while (is_space(*s)) s++;
	while (*s >= '0' && *s <= '9') {
		uint64_t d = (uint64_t)(*s - '0');
		if (v > (UINT64_MAX - d) / 10) return -1;
		v = v * 10 + d;
		s++;
		digits++;
	}
	if (!digits) return -1;
	int shift = 0;
	switch (*s) {
	case 'k': case 'K': shift = 10; s++; break;
	case 'm': case 'M': shift = 20; s++; break;
	case 'g': case 'G': shift = 30; s++; break;
	case 't': case 'T': shift = 40; s++; break;
	default: break;
	}
	if (shift && (*s == 'i' || *s == 'I')) s++;
	if (*s == 'b' || *s == 'B') s++;
	while (is_space(*s)) s++;
	if (*s) return -1;
	if (shift && v > (UINT64_MAX >> shift)) return -1;
	*out = (size_t)(v << shift);
	return 0;
}

/* "0xf800000000" or decimal. 0 on success, -1 when not a number. */
int config_parse_addr(const char *s, uintptr_t *out)
{
	uint64_t v = 0;
	int digits = 0;
	while (is_space(*s)) s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		for (;; s++, digits++) {
			int d;
			if (*s >= '0' && *s <= '9') d = *s - '0';
			else if (*s >= 'a' && *s <= 'f') d = *s - 'a' + 10;
			else if (*s >= 'A' && *s <= 'F') d = *s - 'A' + 10;
			else break;
			if (v >> 60) return -1;
			v = (v << 4) | (uint64_t)d;
		}
	} else {
		for (; *s >= '0' && *s <= '9'; s++, digits++) {
			uint64_t d = (uint64_t)(*s - '0');
			if (v > (UINT64_MAX - d) / 10) return -1;
			v = v * 10 + d;
		}
	}
	while (is_space(*s)) s++;
	if (!digits || *s) return -1;
	*out = (uintptr_t)v;
	return 0;
}

static const char *env_get(char **envp, const char *name)
{
	size_t n = strlen(name);
	if (!envp) return NULL;
	for (char **e = envp; *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* One line: libcontig: NAME="value" <why>; using <instead> */
static void complain(const char *name, const char *value, const char *why, const char *instead,
                     const uint64_t *hex_instead)
{
	char buf[400];
	fmtbuf_t b;
	fmt_init(&b, buf, sizeof buf);
	fmt_str(&b, name);
	fmt_str(&b, "=\"");
	for (const char *v = value; *v && fmt_len(&b) < 200; v++) fmt_char(&b, *v);
	fmt_str(&b, "\" ");
	fmt_str(&b, why);
	fmt_str(&b, "; using ");
	if (hex_instead) fmt_hex(&b, *hex_instead);
	else fmt_str(&b, instead);
	log_line(buf);
}

static void size_words(char *out, size_t n, size_t bytes)
{
	/* "64G" style, for messages: the largest unit that divides exactly. */
	static const char units[] = "KMGT";
	fmtbuf_t b;
	int u = -1;
	fmt_init(&b, out, n);
	while (u < 3 && bytes && (bytes & 1023) == 0) { bytes >>= 10; u++; }
	fmt_dec(&b, bytes);
	if (u >= 0) fmt_char(&b, units[u]);
}

/* v is the word w, ignoring spaces and tabs around it (as the sizes and addresses do) */
static bool is_word(const char *v, const char *w)
{
	size_t n = strlen(w);
	while (is_space(*v)) v++;
	if (strncmp(v, w, n) != 0) return false;
	for (v += n; is_space(*v); v++) {}
	return *v == 0;
}

static int parse_choice(const char *name, const char *v, const char *const *words, int nwords,
                        int dflt, const char *what)
{
	for (int i = 0; i < nwords; i++)
		if (is_word(v, words[i])) return i;
	char why[200];
	fmtbuf_t b;
	fmt_init(&b, why, sizeof why);
	fmt_str(&b, "is not ");
	fmt_str(&b, what);
	fmt_str(&b, " (");
	for (int i = 0; i < nwords; i++) {
		if (i) fmt_str(&b, i == nwords - 1 ? " or " : ", ");
		fmt_str(&b, words[i]);
	}
	fmt_char(&b, ')');
	complain(name, v, why, words[dflt], NULL);
	return dflt;
}

void config_parse(config_t *c, char **envp)
{
	const char *v;
	char tmp[64];

	if ((v = env_get(envp, "CONTIG_VERBOSE")) != NULL)
		c->verbose = !(is_word(v, "0") || is_word(v, "") || is_word(v, "no") || is_word(v, "false") ||
		               is_word(v, "off"));

	/* CONTIG_SIZE: its one line (if any) is said once the base is known, with the size used */
	const char *size_v = env_get(envp, "CONTIG_SIZE"), *size_why = NULL;
	if (size_v) {
		size_t s;
		if (config_parse_size(size_v, &s) != 0)
			size_why = "is not a size (try 512M or 16G)";
		else if (s < MIN_SIZE)
			size_why = "is smaller than the minimum 1M";
		else if (s > MAX_SIZE) {
			size_why = "is larger than the largest range the library supports, 64T";
			c->size = MAX_SIZE;
		} else if (s & (GRANULE - 1)) {
			size_why = "is not a multiple of the 64K granule";
			c->size = align_down(s, GRANULE);
		} else
			c->size = s;
	}

	if ((v = env_get(envp, "CONTIG_BASE")) != NULL) {
		uintptr_t a;
		uint64_t dflt = DEFAULT_BASE;
		if (config_parse_addr(v, &a) != 0)
			complain("CONTIG_BASE", v, "is not an address (try 0xf800000000)", NULL, &dflt);
		else if (a >= USER_TOP || align_up(a, GRANULE) >= USER_TOP)
			complain("CONTIG_BASE", v, "is beyond the last address the kernel maps, 0x7ffffffeffff", NULL, &dflt);
		else if (a < MIN_BASE)
			complain("CONTIG_BASE", v, "is below the lowest mappable address 0x10000", NULL, &dflt);
		else if (a & (GRANULE - 1)) {
			uint64_t up = align_up(a, GRANULE);
			complain("CONTIG_BASE", v, "is not aligned to the 64K granule; rounded up", NULL, &up);
			c->base = up;
		} else
			c->base = a;
	}
	if ((c->base + c->size > USER_TOP || c->base + c->size < c->base) && c->base != DEFAULT_BASE &&
	    DEFAULT_BASE + c->size <= USER_TOP) {
		/* the range would leave the user address space: refuse the base */
		uint64_t dflt = DEFAULT_BASE;
		char why[160];
		fmtbuf_t b;
		size_words(tmp, sizeof tmp, c->size);
		fmt_init(&b, why, sizeof why);
		fmt_str(&b, "with CONTIG_SIZE ");
		fmt_str(&b, tmp);
		fmt_str(&b, " goes beyond the last address the kernel maps, 0x7ffffffeffff");
		complain("CONTIG_BASE", env_get(envp, "CONTIG_BASE"), why, NULL, &dflt);
		c->base = DEFAULT_BASE;
	}
	if (c->base + c->size > USER_TOP || c->base + c->size < c->base) {
		c->size = align_down(USER_TOP - c->base, GRANULE);
		if (!size_why) size_why = "goes beyond the last address the kernel maps from this base";
	}
	if (size_why) {
		size_words(tmp, sizeof tmp, c->size);
		complain("CONTIG_SIZE", size_v ? size_v : "", size_why, tmp, NULL);
	}

	if ((v = env_get(envp, "CONTIG_MODE")) != NULL) {
		static const char *const w[] = { "auto", "reserve", "lazy" };
		static const int m[] = { MODE_AUTO, MODE_RESERVE, MODE_LAZY };
		c->mode = m[parse_choice("CONTIG_MODE", v, w, 3, 0, "a mode")];
	}
	if ((v = env_get(envp, "CONTIG_ON_COLLISION")) != NULL) {
		static const char *const w[] = { "skip", "abort" };
		c->on_collision = parse_choice("CONTIG_ON_COLLISION", v, w, 2, 0, "a policy") == 1 ? COLL_ABORT : COLL_SKIP;
	}
	if ((v = env_get(envp, "CONTIG_FALLBACK")) != NULL) {
		static const char *const w[] = { "none", "system" };
		c->fallback_system = parse_choice("CONTIG_FALLBACK", v, w, 2, 0, "a fallback") == 1;
	}
	if ((v = env_get(envp, "CONTIG_LIMIT")) != NULL) {
		size_t s;
		if (is_word(v, "none") || is_word(v, "0") || is_word(v, ""))
			c->limit_kind = LIMIT_NONE;
		else if (is_word(v, "cgroup"))
			c->limit_kind = LIMIT_CGROUP;
		else if (config_parse_size(v, &s) == 0 && s > 0) {
			c->limit_kind = LIMIT_SIZE;
			c->limit = s;
		} else
			complain("CONTIG_LIMIT", v, "is not a size or \"cgroup\" (try 512M, 2G or cgroup)", "none", NULL);
	}
	if ((v = env_get(envp, "CONTIG_PURGE_MS")) != NULL) {
		size_t ms;
		if (config_parse_size(v, &ms) != 0 || ms > 60000 || (*v < '0' || *v > '9') ||
		    v[strlen(v) - 1] < '0' || v[strlen(v) - 1] > '9') {
			fmtbuf_t b;
			fmt_init(&b, tmp, sizeof tmp);
			fmt_dec(&b, c->purge_ms);
			complain("CONTIG_PURGE_MS", v, "is not a number of milliseconds from 0 to 60000", tmp, NULL);
		} else
			c->purge_ms = (uint32_t)ms;
	}
	if ((v = env_get(envp, "CONTIG_MMAP")) != NULL) {
		static const char *const w[] = { "1", "all", "0" };
		static const int m[] = { MMAP_RW, MMAP_ALL, MMAP_NONE };
		c->mmap = m[parse_choice("CONTIG_MMAP", v, w, 3, 0, "a choice")];
	}
	if ((v = env_get(envp, "CONTIG_STATS")) != NULL) {
		static const char *const w[] = { "0", "1", "json" };
		static const int m[] = { STATS_OFF, STATS_TEXT, STATS_JSON };
		c->stats = m[parse_choice("CONTIG_STATS", v, w, 3, 0, "a choice")];
	}
	if ((v = env_get(envp, "CONTIG_STATS_FILE")) != NULL && *v) {
		size_t n = strlen(v);
		if (n >= sizeof c->stats_file)
			complain("CONTIG_STATS_FILE", v, "is too long", "stderr", NULL);
		else
			memcpy(c->stats_file, v, n + 1);
	}
	if ((v = env_get(envp, "CONTIG_MAP_FILE")) != NULL && *v) {
		if (strlen(v) >= sizeof c->map_file) complain("CONTIG_MAP_FILE", v, "is too long", "no dump", NULL);
		else memcpy(c->map_file, v, strlen(v) + 1);
	}
	if ((v = env_get(envp, "CONTIG_LEAKS")) != NULL) {
		static const char *const w[] = { "0", "report", "error" };
		static const int m[] = { LEAKS_OFF, LEAKS_REPORT, LEAKS_ERROR };
		c->leaks = m[parse_choice("CONTIG_LEAKS", v, w, 3, 0, "a choice")];
	}
	if ((v = env_get(envp, "CONTIG_LEAKS_SUPPRESS")) != NULL && *v) {
		size_t n = strlen(v);
		if (n >= sizeof c->leaks_suppress)
			complain("CONTIG_LEAKS_SUPPRESS", v, "is too long", "no suppressions", NULL);
		else
			memcpy(c->leaks_suppress, v, n + 1);
	}
	if ((v = env_get(envp, "CONTIG_CHECK_MAPS")) != NULL) {
		static const char *const w[] = { "1", "0" };
		c->check_maps = parse_choice("CONTIG_CHECK_MAPS", v, w, 2, 0, "a choice") == 0;
	}
}
