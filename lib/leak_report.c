/* leak_report.c - what a leak check found, told: the leaked blocks grouped by allocation stack
 * (direct and indirect apart), the suppressions (CONTIG_LEAKS_SUPPRESS) matched against each
 * group's frames, and the report, largest group first, in LeakSanitizer's form. The scan that
 * finds the blocks is leak.c's. */
#include "leak_report.h"
#include "stack.h"
#include "common.h"
#include "fmt.h"
#include "os.h"
#include "range.h"
#include <string.h>
#include <unistd.h>

#define GROUP_SLOTS 16384u
#define GROUPS_SHOWN 100

typedef struct group {
	uint32_t stack;                     /* allocation stack id */
	uint8_t indirect;                   /* 1: every block of it is pointed to by another leak */
	uint8_t used;
	int16_t supp;                       /* suppression pattern that matched, -1 none */
	size_t bytes, count;                /* asked bytes, blocks */
} group_t;

static group_t *groups;                 /* open addressing on (stack, indirect); meta memory */
static size_t ngroups;

/* ---- groups ---- */
int leak_groups_reset(void)
{
	if (!groups) groups = meta_alloc(GROUP_SLOTS * sizeof *groups);
	if (!groups) return -1;
	memset(groups, 0, GROUP_SLOTS * sizeof *groups);
	ngroups = 0;
	return 0;
}

void leak_group_add(uint32_t stack, int indirect, size_t bytes)
{
	uint32_t i = (stack * 2654435761u + (uint32_t)indirect) % GROUP_SLOTS;
	for (uint32_t n = 0; n < GROUP_SLOTS; n++, i = (i + 1) % GROUP_SLOTS) {
		group_t *g = &groups[i];
		if (g->used && g->stack == stack && g->indirect == indirect) {
			g->bytes += bytes;
			g->count++;
			return;
		}
		if (!g->used) {
			if (ngroups >= GROUP_SLOTS * 3 / 4 && stack != 0) break;
			g->used = 1;
			g->stack = stack;
			g->indirect = (uint8_t)indirect;
			g->supp = -1;
			g->bytes = bytes;
			g->count = 1;
			ngroups++;
			return;
		}
	}
	leak_group_add(0, indirect, bytes);         /* table full: the block goes in the no-stack group */
}

/* ---- suppressions ---- */
/* The file is read line by line, of any length; only the patterns are kept. What does not fit
 * (more patterns or pattern bytes than below, a line longer than SUPP_LINE) and lines that are
 * not "leak:PATTERN", a comment or blank are named on stderr, not silently dropped. */
#define SUPP_MAX  1024
#define SUPP_LINE 1024
static char supp_buf[65536];
static const char *supp_pat[SUPP_MAX];
static size_t supp_bytes[SUPP_MAX], supp_blocks[SUPP_MAX];
static int nsupp;

static void supp_warn(const char *what, unsigned lineno, const char *text)
{
	char line[SUPP_LINE + 200];
	fmtbuf_t b;
	fmt_init(&b, line, sizeof line);
	fmt_str(&b, "CONTIG_LEAKS_SUPPRESS=\"");
	fmt_str(&b, G.cfg.leaks_suppress);
	fmt_str(&b, "\" line ");
	fmt_dec(&b, lineno);
	fmt_str(&b, ": ");
	fmt_str(&b, what);
	if (text) {
		fmt_str(&b, ": \"");
		fmt_str(&b, text);
		fmt_str(&b, "\"");
	}
	log_line(line);
}

static void supp_load(void)
{
	nsupp = 0;
	memset(supp_bytes, 0, sizeof supp_bytes);
	memset(supp_blocks, 0, sizeof supp_blocks);
	if (!G.cfg.leaks_suppress[0]) return;
	static os_lines_t f;                    /* (static: a 4 KiB buffer) */
	if (os_lines_open(&f, G.cfg.leaks_suppress) < 0) {
		char line[400];
		fmtbuf_t b;
		fmt_init(&b, line, sizeof line);
		fmt_str(&b, "CONTIG_LEAKS_SUPPRESS=\"");
		fmt_str(&b, G.cfg.leaks_suppress);
		fmt_str(&b, "\" cannot be read; no suppressions");
		log_line(line);
		return;
	}
	static char l[SUPP_LINE + 2];
	size_t used = 0;
	unsigned lineno = 0, bad = 0;
	bool full = false;
	while (os_lines_next(&f, l, sizeof l)) {
		lineno++;
		size_t len = strlen(l);
		char *s = l, *t = l + len;
		while (*s == ' ' || *s == '\t') s++;
		while (t > s && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r')) *--t = 0;
		if (!*s || *s == '#') continue;
		if (len > SUPP_LINE) {
			supp_warn("line too long (over 1024 bytes); ignored", lineno, NULL);
			continue;
		}
		if (strncmp(s, "leak:", 5) != 0 || !s[5]) {
			if (bad++ < 8) supp_warn("not a \"leak:PATTERN\" line; ignored", lineno, s);
			continue;
		}
		size_t n = (size_t)(t - (s + 5)) + 1;
		if (nsupp == SUPP_MAX || used + n > sizeof supp_buf) {
			if (!full) supp_warn("too many patterns (at most 1024, 64 KiB); this and the rest ignored", lineno, NULL);
			full = true;
			continue;
		}
		memcpy(supp_buf + used, s + 5, n);
		supp_pat[nsupp++] = supp_buf + used;
		used += n;
	}
	os_lines_close(&f);
}

/* Whether [p, pe) matches a prefix of s (all of s when anchored): '*' matches any run, the rest
 * literally. */
static int glob(const char *p, const char *pe, const char *s, int anchored)
{
	for (; p < pe; p++, s++) {
		if (*p == '*') {
			while (p < pe && *p == '*') p++;
			if (p == pe) return 1;
			for (; *s; s++) if (glob(p, pe, s, anchored)) return 1;
			return 0;
		}
		if (!*s || *s != *p) return 0;
	}
	return !anchored || *s == 0;
}

int leak_pattern_match(const char *pat, const char *s)
{
	if (!pat[0] || !s || !s[0]) return 0;
	const char *p = pat, *pe = pat + strlen(pat);
	int start = *p == '^', end = pe > p + start && pe[-1] == '$';
	if (start) p++;
	if (end) pe--;
	if (p == pe) return 0;
	/* unanchored ends are wildcards: the pattern matches anywhere in s */
	if (start) return glob(p, pe, s, end);
	for (; *s; s++)
		if (glob(p, pe, s, end)) return 1;
	return 0;
}

static stack_sym_t syms[STACK_DEPTH_MAX];
static stack_sym_t inl_sym;             /* an inlined caller, as a frame to print */

/* The first pattern matching a frame of stack id (function, module or source file), or -1. */
static int supp_match(uint32_t id)
{
	const uintptr_t *pcs;
	unsigned n = stack_frames(id, &pcs);
	if (!nsupp || !n || n > STACK_DEPTH_MAX) return -1;
	memset(syms, 0, sizeof syms);
	if (stack_symbolize(pcs, n, syms) != 0) return -1;
	for (int k = 0; k < nsupp; k++)
		for (unsigned f = 0; f < n; f++) {
			const stack_sym_t *y = &syms[f];
			if (leak_pattern_match(supp_pat[k], y->func) || leak_pattern_match(supp_pat[k], y->module) ||
			    leak_pattern_match(supp_pat[k], y->file))
				return k;
			for (unsigned c = 0; c < y->ninl && c < STACK_INLINED; c++)   /* inlined callers too */
				if (leak_pattern_match(supp_pat[k], y->inl[c].func) ||
				    leak_pattern_match(supp_pat[k], y->inl[c].file))
					return k;
		}
	return -1;
}

/* ---- the report ---- */
typedef struct out { char buf[4096]; size_t n; } out_t;

static void out_flush(out_t *o)
{
	int fd = o->n ? report_fd() : -1;
	if (fd >= 0) os_write(fd, o->buf, o->n);
	o->n = 0;
}

static void out_line(out_t *o, const char *s, size_t n)
{
	if (o->n + n + 1 > sizeof o->buf) out_flush(o);
	if (n + 1 > sizeof o->buf) n = sizeof o->buf - 1;
	memcpy(o->buf + o->n, s, n);
	o->n += n;
	o->buf[o->n++] = '\n';
}

static void out_fmt(out_t *o, const fmtbuf_t *b) { out_line(o, b->start, fmt_len(b)); }

static void print_group(out_t *o, const group_t *g)
{
	char line[1200];                    /* a frame: its function, file and module in full */
	fmtbuf_t b;
	out_line(o, "", 0);
	fmt_init(&b, line, sizeof line);
	fmt_str(&b, g->indirect ? "Indirect leak of " : "Direct leak of ");
	fmt_dec(&b, g->bytes);
	fmt_str(&b, " byte(s) in ");
	fmt_dec(&b, g->count);
	fmt_str(&b, " object(s) allocated from:");
	out_fmt(o, &b);
	const uintptr_t *pcs;
	unsigned n = stack_frames(g->stack, &pcs);
	if (!n || n > STACK_DEPTH_MAX) return;
	memset(syms, 0, sizeof syms);
	int ok = stack_symbolize(pcs, n, syms) == 0;
	/* a frame whose code was inlined is followed by the callers it went into, as frames of their
	 * own at the same address (as LeakSanitizer prints them) */
	unsigned num = 0;
	for (unsigned f = 0; f < n; f++) {
		if (!ok) memset(&syms[f], 0, sizeof syms[f]);
		size_t len = stack_format(line, sizeof line, num++, pcs[f], &syms[f]);
		out_line(o, line, len < sizeof line ? len : sizeof line - 1);
		for (unsigned c = 0; c < syms[f].ninl && c < STACK_INLINED; c++) {
			_Static_assert(sizeof inl_sym.func >= sizeof syms[f].inl[c].func, "fits");
			_Static_assert(sizeof inl_sym.file >= sizeof syms[f].inl[c].file, "fits");
			memset(inl_sym.func, 0, sizeof inl_sym.func);
			memcpy(inl_sym.func, syms[f].inl[c].func, sizeof syms[f].inl[c].func);
			memcpy(inl_sym.file, syms[f].inl[c].file, sizeof syms[f].inl[c].file);
			inl_sym.line = syms[f].inl[c].line;
			memcpy(inl_sym.module, syms[f].module, sizeof inl_sym.module);
			inl_sym.offset = syms[f].offset;
			len = stack_format(line, sizeof line, num++, pcs[f], &inl_sym);
			out_line(o, line, len < sizeof line ? len : sizeof line - 1);
		}
	}
}

/* Largest first (direct before indirect on a tie); groups already printed are marked used = 2. */
static group_t *next_group(void)
{
	group_t *best = NULL;
	for (size_t i = 0; i < GROUP_SLOTS; i++) {
		group_t *g = &groups[i];
		if (g->used != 1 || g->supp >= 0) continue;
		if (!best || g->bytes > best->bytes || (g->bytes == best->bytes && g->indirect < best->indirect))
			best = g;
	}
	return best;
}

void leak_report(size_t *bytes, size_t *blocks)
{
	size_t lbytes = 0, lblocks = 0, sbytes = 0, sblocks = 0, nleak = 0;
	supp_load();
	for (size_t i = 0; i < GROUP_SLOTS; i++) {
		group_t *g = &groups[i];
		if (!g->used) continue;
		g->supp = (int16_t)supp_match(g->stack);
		if (g->supp >= 0) {
			supp_bytes[g->supp] += g->bytes;
			supp_blocks[g->supp] += g->count;
			sbytes += g->bytes;
			sblocks += g->count;
		} else {
			lbytes += g->bytes;
			lblocks += g->count;
			nleak++;
		}
	}
	*bytes = lbytes;
	*blocks = lblocks;
	if (!nleak && !sblocks) return;
	out_t o;
	o.n = 0;
	char line[300];
	fmtbuf_t b;
	if (nleak) {
		fmt_init(&b, line, sizeof line);
		fmt_str(&b, "libcontig: detected memory leaks (pid ");
		fmt_dec(&b, (uint64_t)getpid());
		fmt_char(&b, ')');
		out_fmt(&o, &b);
	}
	size_t shown = 0;
	for (group_t *g; shown < GROUPS_SHOWN && (g = next_group()) != NULL; shown++) {
		print_group(&o, g);
		g->used = 2;
	}
	if (shown) out_line(&o, "", 0);
	if (nleak > shown) {
		fmt_init(&b, line, sizeof line);
		fmt_str(&b, "libcontig: ");
		fmt_dec(&b, nleak - shown);
		fmt_str(&b, " more leak group(s) not shown (the smallest)");
		out_fmt(&o, &b);
	}
	if (sblocks) {
		int used = 0;
		for (int k = 0; k < nsupp; k++) used += supp_blocks[k] != 0;
		fmt_init(&b, line, sizeof line);
		fmt_str(&b, "libcontig: suppressed: ");
		fmt_dec(&b, sbytes);
		fmt_str(&b, " byte(s) in ");
		fmt_dec(&b, sblocks);
		fmt_str(&b, " allocation(s) by ");
		fmt_dec(&b, (uint64_t)used);
		fmt_str(&b, " pattern(s)");
		out_fmt(&o, &b);
	}
	if (nleak) {
		fmt_init(&b, line, sizeof line);
		fmt_str(&b, "libcontig: SUMMARY: ");
		fmt_dec(&b, lbytes);
		fmt_str(&b, " byte(s) leaked in ");
		fmt_dec(&b, lblocks);
		fmt_str(&b, " allocation(s).");
		out_fmt(&o, &b);
	}
	out_flush(&o);
}
