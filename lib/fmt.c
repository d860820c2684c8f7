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
