/* cgroup.c - the memory limit of the process's own memory cgroup (v2 memory.max or v1
 * memory.limit_in_bytes), found through /proc/self/cgroup and /proc/self/mountinfo. No stdio, no malloc. */
#include "cgroup.h"
#include "fmt.h"
#include "os.h"
#include <string.h>

static long read_file(const char *path, char *buf, size_t n)
{
	int fd = os_open_read(path);
	if (fd < 0) return -1;
	size_t got = 0;
	for (;;) {
		long r = os_read(fd, buf + got, n - 1 - got);
		if (r <= 0) break;
		got += (size_t)r;
		if (got >= n - 1) break;
	}
	os_close(fd);
	buf[got] = 0;
	return (long)got;
}

/* Next line of s into line (NUL-terminated); returns the rest or NULL at the end. */
static const char *next_line(const char *s, char *line, size_t n)
{
	if (!*s) return NULL;
	size_t i = 0;
	while (*s && *s != '\n') { if (i < n - 1) line[i++] = *s; s++; }
	line[i] = 0;
	return *s ? s + 1 : s;
}

/* Split on spaces into at most max fields (in place). */
static int fields(char *line, char **f, int max)
{
	int n = 0;
	char *s = line;
	while (*s && n < max) {
		while (*s == ' ') *s++ = 0;
		if (!*s) break;
		f[n++] = s;
		while (*s && *s != ' ') s++;
	}
	return n;
}

static bool has_word(const char *list, const char *w)
{
	size_t n = strlen(w);
	for (const char *s = list; *s;) {
		if (strncmp(s, w, n) == 0 && (s[n] == 0 || s[n] == ',')) return true;
		while (*s && *s != ',') s++;
		if (*s == ',') s++;
	}
	return false;
}

static void join(char *out, size_t n, const char *a, const char *b, const char *c)
{
	fmtbuf_t f;
	fmt_init(&f, out, n);
	fmt_str(&f, a);
	fmt_str(&f, b);
	fmt_str(&f, c);
}

/* The limit in bytes; 0 when there is none ("max", or a number so large it means none).
 * *where gets the file it came from. */
size_t cgroup_memory_limit(char *where, size_t wn)
{
	static char buf[16384];
	char line[1024], v1path[512] = "", v2path[512] = "";
	bool have_v1 = false, have_v2 = false;
	if (read_file("/proc/self/cgroup", buf, sizeof buf) < 0) return 0;
	for (const char *s = buf; (s = next_line(s, line, sizeof line)) != NULL;) {
		/* "hierarchy-id:controllers:path" */
		char *c1 = strchr(line, ':');
		if (!c1) continue;
		char *c2 = strchr(c1 + 1, ':');
		if (!c2) continue;
		*c2 = 0;
		if (strcmp(line, "0") == 0 || (c1 + 1 == c2 && line[0] == '0')) {
			memcpy(v2path, c2 + 1, strlen(c2 + 1) + 1 < sizeof v2path ? strlen(c2 + 1) + 1 : sizeof v2path - 1);
			have_v2 = true;
		} else if (has_word(c1 + 1, "memory")) {
			size_t n = strlen(c2 + 1);
			if (n >= sizeof v1path) n = sizeof v1path - 1;
			memcpy(v1path, c2 + 1, n);
			v1path[n] = 0;
			have_v1 = true;
		}
	}
	static os_lines_t mi;      /* (static: a 4 KiB buffer) */
	if (os_lines_open(&mi, "/proc/self/mountinfo") < 0) return 0;
	char dir[1100] = "";
	const char *leaf = NULL;
	size_t mntlen = 0;
	while (os_lines_next(&mi, line, sizeof line)) {
		/* id parent maj:min root mountpoint opts ... - fstype source superopts */
		char *f[16];
		int n = fields(line, f, 16);
		int dash = -1;
		for (int i = 6; i < n; i++) if (strcmp(f[i], "-") == 0) { dash = i; break; }
		if (dash < 0 || dash + 1 >= n) continue;
		const char *root = f[3], *mnt = f[4], *type = f[dash + 1];
		const char *super = dash + 3 < n ? f[dash + 3] : "";
		const char *path = NULL;
		if (have_v1 && strcmp(type, "cgroup") == 0 && has_word(super, "memory")) {
			path = v1path;
			leaf = "/memory.limit_in_bytes";
		} else if (have_v2 && !have_v1 && strcmp(type, "cgroup2") == 0) {
			path = v2path;
			leaf = "/memory.max";
		}
		if (!path) continue;
		/* the cgroup path is relative to the hierarchy; the mount shows it from root */
		size_t rl = strlen(root);
		if (strcmp(root, "/") != 0 && strncmp(path, root, rl) == 0) path += rl;
		if (strcmp(path, "/") == 0) path = "";
		mntlen = strlen(mnt);
		join(dir, sizeof dir, mnt, path, "");
		break;
	}
	os_lines_close(&mi);
	if (!dir[0] || !leaf) return 0;
	/* The tightest limit of the cgroup and its ancestors (up to the mount): a parent's limit
	 * binds the children too. */
	size_t best = 0;
	char file[1200], val[64];
	for (;;) {
		join(file, sizeof file, dir, leaf, "");
		if (read_file(file, val, sizeof val) > 0 && strncmp(val, "max", 3) != 0) {
			size_t v = 0;
			for (const char *p = val; *p >= '0' && *p <= '9'; p++) v = v * 10 + (size_t)(*p - '0');
			/* v1's "no limit" is a page-rounded LONG_MAX */
			if (v && v < ((size_t)1 << 62) && (!best || v < best)) {
				best = v;
				if (where) join(where, wn, file, "", "");
			}
		}
		size_t dl = strlen(dir);
		if (dl <= mntlen) break;
		while (dl > mntlen && dir[dl - 1] != '/') dl--;
		if (dl > mntlen) dl--;                 /* drop the slash too */
		dir[dl] = 0;
	}
	return best;
}
