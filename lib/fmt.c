/* fmt.c - allocation-free formatting into caller buffers, the log lines, and the single fatal
 * path: format on the stack, write(2) "libcontig: func(): message", abort. */
#include "fmt.h"
#include "os.h"
#include <signal.h>
#include <stdlib.h>
#include <string.h>

void fmt_init(fmtbuf_t *b, char *buf, size_t n) { b->p = b->start = buf; b->left = n - 1; *buf = 0; }
size_t fmt_len(const fmtbuf_t *b) { return (size_t)(b->p - b->start); }

void fmt_char(fmtbuf_t *b, char c)
{
	if (b->left) { *b->p++ = c; *b->p = 0; b->left--; }
}

void fmt_str(fmtbuf_t *b, const char *s)
{
	while (s && *s) fmt_char(b, *s++);
}

void fmt_dec(fmtbuf_t *b, uint64_t v)
{
	char t[24];
	int i = 0;
	do t[i++] = (char)('0' + v % 10); while ((v /= 10) != 0);
	while (i) fmt_char(b, t[--i]);
}

void fmt_hex(fmtbuf_t *b, uint64_t v)
{
	char t[20];
	int i = 0;
	do t[i++] = "0123456789abcdef"[v & 15]; while ((v >>= 4) != 0);
	fmt_str(b, "0x");
	while (i) fmt_char(b, t[--i]);
}

/* Human-readable bytes: exact below 1 KiB, one decimal above ("1.5 MiB"). */
/* A file name from CONTIG_STATS_FILE or CONTIG_MAP_FILE: the children of a program inherit the
 * variable, and would otherwise overwrite its output with theirs. */
void fmt_path_pid(fmtbuf_t *b, const char *pattern)
{
	for (const char *s = pattern; *s; s++) {
		if (s[0] == '%' && s[1] == 'p') { fmt_dec(b, (uint64_t)getpid()); s++; }
		else fmt_char(b, *s);
	}
}

void fmt_size(fmtbuf_t *b, uint64_t bytes)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;
	uint64_t whole = bytes, tenth = 0;
	while (whole >= 1024 && u < 4) {
		tenth = (whole % 1024) * 10 / 1024;
		whole /= 1024;
		u++;
	}
	fmt_dec(b, whole);
	if (u) { fmt_char(b, '.'); fmt_dec(b, tenth); }
	fmt_char(b, ' ');
	fmt_str(b, unit[u]);
}

void log_line(const char *line)
{
	char buf[512];
	fmtbuf_t b;
	fmt_init(&b, buf, sizeof buf);
	fmt_str(&b, "libcontig: ");
	fmt_str(&b, line);
	fmt_char(&b, '\n');
	os_write(2, buf, fmt_len(&b));
}

void log_verbose(const char *line)
{
	if (G.cfg.verbose) log_line(line);
}

/* The exit reports (leaks, statistics) go to the stderr the program started with. Programs often
 * close stderr before they exit (gnulib's close_stdout does), which would lose the report, and a
 * program that closed it may have opened a file that took fd 2, which the report must not write
 * into. So, under CONTIG_LEAKS or CONTIG_STATS only, initialisation keeps a close-on-exec copy of
 * fd 2 at a high number and remembers which file it is. At exit fd 2 is used while it is still
 * that file; otherwise the copy, if it is still that file too; otherwise nothing is written. */
static struct { int fd; bool saved; uint64_t dev, ino; } err0 = { -1, false, 0, 0 };

static bool same_file(int fd)
{
	uint64_t dev, ino;
	return fd >= 0 && os_file_id(fd, &dev, &ino) == 0 && dev == err0.dev && ino == err0.ino;
}

void report_fd_save(void)
{
	static const int floor[] = { 1000, 100, 10 };
	err0.saved = true;
	if (os_file_id(2, &err0.dev, &err0.ino) != 0) return;   /* no stderr at start: no report */
	for (unsigned i = 0; i < sizeof floor / sizeof floor[0] && err0.fd < 0; i++) {
		int fd = os_dup_cloexec(2, floor[i]);
		if (fd >= 0) err0.fd = fd;
	}
	if (err0.fd < 0) err0.fd = 2;   /* no copy: fd 2 while it is the same file */
}

int report_fd(void)
{
	if (!err0.saved) return 2;
	if (same_file(2)) return 2;
	if (err0.fd != 2 && same_file(err0.fd)) return err0.fd;
	return -1;
}

static NORETURN void die(const char *msg)
{
	os_write(2, msg, strlen(msg));
	abort();
}

void fatal_pointer(const char *func, const void *p)
{
	char buf[160];
	fmtbuf_t b;
	fmt_init(&b, buf, sizeof buf);
	fmt_str(&b, "libcontig: ");
	fmt_str(&b, func);
	fmt_str(&b, "(): invalid pointer ");
	fmt_hex(&b, (uintptr_t)p);
	fmt_char(&b, '\n');
	die(buf);
}

void fatal_corrupt(const char *func, const void *p)
{
	char buf[160];
	fmtbuf_t b;
	fmt_init(&b, buf, sizeof buf);
	fmt_str(&b, "libcontig: ");
	fmt_str(&b, func);
	fmt_str(&b, "(): heap corruption at ");
	fmt_hex(&b, (uintptr_t)p);
	fmt_str(&b, " (a free-list link was overwritten: use after free or overflow?)\n");
	die(buf);
}

void fatal_msg(const char *func, const char *msg)
{
	char buf[400];
	fmtbuf_t b;
	fmt_init(&b, buf, sizeof buf);
	fmt_str(&b, "libcontig: ");
	fmt_str(&b, func);
	fmt_str(&b, "(): ");
	fmt_str(&b, msg);
	fmt_char(&b, '\n');
	die(buf);
}

void fatal_assert(const char *file, int line, const char *cond)
{
	char buf[400];
	fmtbuf_t b;
	fmt_init(&b, buf, sizeof buf);
	fmt_str(&b, "libcontig: assertion failed at ");
	fmt_str(&b, file);
	fmt_char(&b, ':');
	fmt_dec(&b, (uint64_t)line);
	fmt_str(&b, ": ");
	fmt_str(&b, cond);
	fmt_char(&b, '\n');
	die(buf);
}
