/* pagemap.c - the page map written out at exit (CONTIG_MAP_FILE), one text line per run: what
 * `contig map -- COMMAND` reads. Allocation-free; never on a fast path. */
#include "pagemap.h"
#include "beacon.h"
#include "classes.h"
#include "fmt.h"
#include "heap.h"
#include "os.h"
#include "range.h"
#include "stats.h"
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- the dump ---- */
typedef struct dump { int fd; int err; size_t n; char buf[8192]; } dump_t;

static void dump_flush(dump_t *d)
{
	size_t off = 0;
	while (off < d->n) {
		long w = os_write(d->fd, d->buf + off, d->n - off);
		if (w <= 0) { d->err = 1; break; }
		off += (size_t)w;
	}
	d->n = 0;
}

static void dump_line(dump_t *d, const fmtbuf_t *b)
{
	size_t n = fmt_len(b);
	if (d->n + n + 1 > sizeof d->buf) dump_flush(d);
	memcpy(d->buf + d->n, b->start, n);
	d->n += n;
	d->buf[d->n++] = '\n';
}

#define DLINE(d, ...) do { char lb_[300]; fmtbuf_t b_; fmt_init(&b_, lb_, sizeof lb_); \
	fmtbuf_t *b = &b_; __VA_ARGS__; dump_line((d), b); } while (0)

static void kv(dump_t *d, const char *key, uint64_t v, bool hex)
{
	DLINE(d, fmt_str(b, key); fmt_char(b, ' '); if (hex) fmt_hex(b, v); else fmt_dec(b, v));
}

static void run_head(fmtbuf_t *b, size_t i, size_t n, const char *kind)
{
	fmt_hex(b, page_addr(i));
	fmt_char(b, ' ');
	fmt_dec(b, n);
	fmt_char(b, ' ');
	fmt_str(b, kind);
}

static void field(fmtbuf_t *b, const char *name, uint64_t v)
{
	fmt_char(b, ' ');
	fmt_str(b, name);
	fmt_char(b, '=');
	fmt_dec(b, v);
}

/* A free run cut where its pages change between dirty (resident until purged) and clean. */
static void dump_free(dump_t *d, size_t i, size_t n)
{
	for (size_t a = i; a < i + n;) {
		bool dirty = G.pages[a].flags & PF_DIRTY;
		size_t e = a + 1;
		while (e < i + n && (bool)(G.pages[e].flags & PF_DIRTY) == dirty) e++;
		DLINE(d, run_head(b, a, e - a, dirty ? "free-dirty" : "free-clean"));
		a = e;
	}
}

static size_t dump_run(dump_t *d, size_t i, size_t f)
{
	const page_t *pg = &G.pages[i];
	size_t n = 1;
	switch (pg->kind) {
	case PK_SMALL: {
		n = pg->cls > 0 && pg->cls < NCLASS ? class_pages[pg->cls] : 1;
		if (i + n > f) n = f - i;
		uint32_t bs = pg->block_size;
		DLINE(d, run_head(b, i, n, "small"); field(b, "class", pg->cls); field(b, "block", bs);
		      field(b, "live", page_hot(pg)->used & USED_MASK); field(b, "capacity", pg->capacity);
		      field(b, "blocks", bs ? (n << PAGE_SHIFT) / bs : 0));
		return n;
	}
	case PK_LARGE:
	case PK_MMAP:
		n = pg->npages ? pg->npages : 1;
		if (i + n > f) n = f - i;
		if (pg->kind == PK_LARGE && pg->asked == ASKED_CACHED)
			dump_free(d, i, n);     /* freed, kept by a thread's cache: its pages are dirty */
		else if (pg->kind == PK_LARGE)
			DLINE(d, run_head(b, i, n, "large"); field(b, "asked", pg->asked); field(b, "usable", pg->usable));
		else {
			/* pages of a PROT_NONE reservation nothing has made accessible: not committed */
			size_t resv = 0;
			for (size_t k = i; k < i + n; k++) resv += (G.pages[k].flags & PF_RESV) != 0;
			DLINE(d, run_head(b, i, n, "mmap"); field(b, "from", pg->map_lo); field(b, "to", pg->map_hi);
			      if (resv) field(b, "reserved", resv));
		}
		return n;
	case PK_FREE:
		n = pg->npages ? pg->npages : 1;
		if (i + n > f) n = f - i;
		dump_free(d, i, n);
		return n;
	default: {
		/* page by page kinds (foreign, a caller's MAP_FIXED), and anything not a head */
		uint8_t k = pg->kind;
		while (i + n < f && G.pages[i + n].kind == k) n++;
		DLINE(d, run_head(b, i, n, k == PK_FOREIGN ? "foreign" : k == PK_MMAP_FIXED ? "fixed" :
		                         k == PK_UNUSED ? "unused" : "stray"));
		return n;
	}
	}
}

int pagemap_write(int fd)
{
	static dump_t d;
	contig_stats_t st;
	d.fd = fd;
	d.err = 0;
	d.n = 0;
	st.size = sizeof st;
	stats_collect(&st);
	DLINE(&d, fmt_str(b, "libcontig page map "); fmt_dec(b, PAGEMAP_VERSION));
	kv(&d, "pid", (uint64_t)getpid(), false);
	kv(&d, "base", st.base, true);
	kv(&d, "size", st.range_size, false);
	kv(&d, "page_size", PAGE_SIZE, false);
	DLINE(&d, fmt_str(b, "mode "); fmt_str(b, st.mode == MODE_RESERVE ? "reserve" : st.mode == MODE_LAZY ? "lazy" : "auto"));
	kv(&d, "reserved", st.reserved, false);
	kv(&d, "frontier", st.base + st.mapped, true);
	kv(&d, "committed", st.committed, false);
	kv(&d, "committed_peak", st.committed_peak, false);
	kv(&d, "resident", st.resident, false);
	kv(&d, "resident_peak", st.resident_peak, false);
	kv(&d, "live_bytes", st.live_bytes, false);
	kv(&d, "live_blocks", st.live_blocks, false);
	kv(&d, "mmap_bytes", st.mmap_bytes, false);
	kv(&d, "purged_bytes", st.purged_bytes, false);
	kv(&d, "collisions", st.collisions, false);
	for (size_t c = 0; c < st.collisions && c < CONTIG_STATS_COLLISIONS; c++)
		DLINE(&d, fmt_str(b, "collision "); fmt_hex(b, st.collision[c].addr); fmt_char(b, ' ');
		      fmt_dec(b, st.collision[c].len); fmt_char(b, ' ');
		      fmt_str(b, st.collision[c].route == CONTIG_ROUTE_START ? "start" :
		                 st.collision[c].route == CONTIG_ROUTE_GROW ? "grow" :
		                 st.collision[c].route == CONTIG_ROUTE_MMAP ? "mmap" : "maps"));
	DLINE(&d, fmt_str(b, "runs"));
	range_lock();
	size_t f = range_frontier();
	if (f > G.npages) f = G.npages;
	for (size_t i = 0; i < f;)
		i += dump_run(&d, i, f);
	range_unlock();
	if (f < G.npages)
		DLINE(&d, run_head(b, f, G.npages - f, "unused"));
	DLINE(&d, fmt_str(b, "end"));
	dump_flush(&d);
	return d.err ? -1 : 0;
}

/* CONTIG_MAP_FILE with each %p replaced by the process ID. */
static void map_path(char *out, size_t n)
{
	fmtbuf_t b;
	fmt_init(&b, out, n);
	fmt_path_pid(&b, G.cfg.map_file);
}

void pagemap_exit(void)
{
	if (!G.cfg.map_file[0] || atomic_load(&G.state) != 2) return;
	char path[sizeof G.cfg.map_file + 24];
	map_path(path, sizeof path);
	int fd = os_open_write(path);
	if (fd < 0) {
		char buf[400];
		fmtbuf_t b;
		fmt_init(&b, buf, sizeof buf);
		fmt_str(&b, "CONTIG_MAP_FILE: cannot write ");
		fmt_str(&b, path);
		log_line(buf);
		return;
	}
	heap_collect_all();                /* remote frees count: live counts as the program left them */
	if (pagemap_write(fd) != 0) log_line("CONTIG_MAP_FILE: the page map dump was cut short (write failed)");
	os_close(fd);
}
