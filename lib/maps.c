/* maps.c - reads the process's maps (/proc/thread-self/maps) without stdio or malloc, for finding foreign mappings in the range. */
#include "common.h"
#include "os.h"
#include "maps.h"
#include <errno.h>
#include <string.h>

static int hexval(char c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

static const char *parse_hex(const char *s, uintptr_t *out)
{
	uintptr_t v = 0;
	int d;
	while ((d = hexval(*s)) >= 0) { v = (v << 4) | (uintptr_t)d; s++; }
	*out = v;
	return s;
}

/* Fills m from one line "start-end perms offset dev inode   path". */
static void parse_line(const char *line, maps_entry_t *m)
{
	const char *s = parse_hex(line, &m->lo);
	if (*s == '-') s++;
	s = parse_hex(s, &m->hi);
	while (*s == ' ') s++;
	for (int i = 0; i < 4; i++) m->perms[i] = *s ? *s++ : '-';
	m->perms[4] = 0;
	/* offset, dev, inode */
	m->anon = 1;
	for (int field = 0; field < 3; field++) {
		while (*s == ' ') s++;
		const char *f = s;
		while (*s && *s != ' ') s++;
		if (field == 2) {
			for (const char *q = f; q < s; q++) if (*q != '0') m->anon = 0;
		}
	}
	while (*s == ' ') s++;
	m->path = s;
	/* no inode and no file: pseudo-paths like [heap] (the kernel names whatever mapping covers
	 * the brk area so, ours included) still count as anonymous */
	if (*s && *s != '[') m->anon = 0;
	m->line = line;
}

int maps_scan(uintptr_t lo, uintptr_t hi, maps_fn fn, void *arg)
{
	os_lines_t l;
	char line[512];
	int err = os_lines_open(&l, "proc:maps");
	if (err < 0) return err;
	int stopped = 0, lines = 0;
	while (!stopped && os_lines_next(&l, line, sizeof line)) {
		maps_entry_t m;
		lines++;
		parse_line(line, &m);
		if (m.hi > lo && m.lo < hi) stopped = fn(&m, arg) != 0;
	}
	os_lines_close(&l);
	/* a process has mappings (this library's own, at least): none read means none could be */
	return lines ? stopped : -ENODATA;
}

/* Whether the mapping that holds address lo has VM_NORESERVE ("nr" in its VmFlags line of
 * /proc/self/smaps): 1 or 0, -1 when no such mapping or no smaps. Reads smaps up to that
 * mapping only. */
int maps_noreserve(uintptr_t lo)
{
	os_lines_t l;
	char line[512] = { 0 };      /* (zeroed: the analyzer cannot see the raw read fill it) */
	int found = 0, ret = -1;
	if (os_lines_open(&l, "proc:smaps") < 0) return -1;
	while (ret < 0 && os_lines_next(&l, line, sizeof line)) {
		if (!found) {
			uintptr_t a = 0, b = 0;
			const char *s = parse_hex(line, &a);
			if (*s == '-') parse_hex(s + 1, &b);
			found = *s == '-' && a <= lo && lo < b;
		} else if (strncmp(line, "VmFlags:", 8) == 0) {
			ret = 0;
			for (const char *s = line + 8; *s; s++)
				if (s[0] == ' ' && s[1] == 'n' && s[2] == 'r' && (s[3] == ' ' || s[3] == 0)) ret = 1;
		}
	}
	os_lines_close(&l);
	return ret;
}

/* Field k (0-based) of /proc/self/statm, in bytes. */
static size_t statm_field(int k)
{
	char buf[128];
	int fd = os_open_proc("statm");
	if (fd < 0) return 0;
	long n = os_read(fd, buf, sizeof buf - 1);
	os_close(fd);
	if (n <= 0) return 0;
	buf[n] = 0;
	const char *s = buf;
	for (int i = 0; i < k; i++) {
		while (*s && *s != ' ') s++;
		while (*s == ' ') s++;
	}
	size_t pages = 0;
	for (; *s >= '0' && *s <= '9'; s++) pages = pages * 10 + (size_t)(*s - '0');
	return pages * OS_PAGE;
}

/* The address-space size, what RLIMIT_AS counts. */
size_t maps_vm_size(void) { return statm_field(0); }

/* Resident now. */
size_t maps_rss(void) { return statm_field(1); }

/* VmHWM from /proc/self/status, in bytes. */
size_t maps_peak_rss(void)
{
	char buf[4096];
	int fd = os_open_proc("status");
	if (fd < 0) return 0;
	long n = os_read(fd, buf, sizeof buf - 1);
	os_close(fd);
	if (n <= 0) return 0;
	buf[n] = 0;
	for (char *s = buf; *s; s++) {
		if ((s == buf || s[-1] == '\n') && s[0] == 'V' && s[1] == 'm' && s[2] == 'H' && s[3] == 'W' &&
		    s[4] == 'M' && s[5] == ':') {
			s += 6;
			while (*s == ' ' || *s == '\t') s++;
			size_t kb = 0;
			while (*s >= '0' && *s <= '9') kb = kb * 10 + (size_t)(*s++ - '0');
			return kb * 1024;
		}
	}
	return 0;
}

/* The value after key in a /proc file's text ("MemTotal:   24587964 kB"), 0 when absent. */
static uint64_t field_after(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	if (!p) return 0;
	p += strlen(key);
	while (*p == ' ' || *p == '\t' || *p == ':') p++;
	uint64_t v = 0;
	for (; *p >= '0' && *p <= '9'; p++) v = v * 10 + (uint64_t)(*p - '0');
	return v;
}

size_t maps_swap_total(void)
{
	char buf[2048];
	int fd = os_open_read("/proc/meminfo");
	if (fd < 0) return SIZE_MAX;                /* unknown: assume there is swap */
	long n = os_read(fd, buf, sizeof buf - 1);
	os_close(fd);
	if (n <= 0) return SIZE_MAX;
	buf[n] = 0;
	if (!strstr(buf, "SwapTotal")) return SIZE_MAX;
	return (size_t)field_after(buf, "SwapTotal") * 1024;
}

size_t maps_overcommit_cap(void)
{
	static _Atomic(size_t) cap;             /* 0 not read yet */
	size_t c = atomic_load_explicit(&cap, memory_order_relaxed);
	if (c) return c;
	c = SIZE_MAX;
	char buf[2048];
	int fd = os_open_read("/proc/sys/vm/overcommit_memory");
	long n = fd >= 0 ? os_read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0) os_close(fd);
	if (n > 0 && buf[0] == '0' && (fd = os_open_read("/proc/meminfo")) >= 0) {
		n = os_read(fd, buf, sizeof buf - 1);
		os_close(fd);
		if (n > 0) {
			buf[n] = 0;
			uint64_t kb = field_after(buf, "MemTotal") + field_after(buf, "SwapTotal");
			if (kb && kb < (uint64_t)SIZE_MAX / 1024) c = (size_t)kb * 1024;
		}
	}
	atomic_store_explicit(&cap, c, memory_order_relaxed);
	return c;
}
