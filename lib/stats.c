/* stats.c - statistics gathered from the page descriptors and the heaps, the exit summary
 * (text or JSON). Formats on the stack; never allocates. */
#include "stats.h"
#include "init.h"
#include "heap.h"
#include "region.h"
#include "mmap.h"
#include "alloc.h"
#include "fmt.h"
#include "os.h"
#include "maps.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void stats_collect(contig_stats_t *st)
{
	region_stats_t rs;
	memset(st, 0, sizeof *st);
	st->size = sizeof *st;
	st->base = G.cfg.base;
	st->range_size = G.size;
	/* the heaps' frees before the runs' live counts: a block freed in between is then missed
	 * by both, never counted twice (see calls_malloc below). So too the freed large blocks the
	 * thread caches hold (large_cache.c), which still count in the runs' figures: a block a
	 * cache takes in between is then counted live, not taken off twice. */
	heap_counts_t hc;
	heap_count(&hc);
	uint64_t small_frees = hc.frees, rmade = hc.rmade, rfreed = hc.rfreed;
	st->calls_realloc = hc.reallocs;
	region_get_stats(&rs);
	rs.large_blocks = rs.large_blocks > hc.cached_blocks ? rs.large_blocks - hc.cached_blocks : 0;
	rs.large_bytes = rs.large_bytes > hc.cached_bytes ? rs.large_bytes - hc.cached_bytes : 0;
	rs.large_allocs += hc.cache_reused;
	st->mode = rs.range.mode;
	st->reserved = rs.range.reserved;
	st->auto_reserved_all = rs.range.reserved == G.size;
	st->mapped = rs.range.mapped;
	st->committed = rs.committed;
	st->committed_peak = rs.committed_peak;
	/* Two files read one after the other: a page touched between the reads (this function's own
	 * stack, another thread) could leave the current figure above the peak. The peak is at least
	 * what is resident now. */
	st->resident = maps_rss();
	st->resident_peak = maps_peak_rss();
	if (st->resident_peak < st->resident) st->resident_peak = st->resident;
	st->mmap_bytes = rs.mmap_bytes;
	st->purged_bytes = rs.purged;
	st->fallback_bytes = rs.fallback_bytes;
	st->limit = rs.limit;
	st->limit_hits = rs.limit_hits;
	st->collisions = rs.range.collisions;
	memcpy(st->collision, rs.range.coll, sizeof st->collision);
	size_t frontier = rs.range.mapped >> PAGE_SHIFT;
	uint64_t pending = 0;               /* blocks other threads freed, not taken back by their owner */
	/* Under the range lock: a run given back and made another kind meanwhile overlays its
	 * page_hot_t pointer with that kind's fields (a large block's asked is 0 at first) */
	range_lock();
	for (size_t i = 0; i < frontier; i++) {
		const page_t *pg = &G.pages[i];
		if (pg->kind != PK_SMALL) continue;
		uint64_t used = page_hot(pg)->used & USED_MASK, pend = 0;
		if (__atomic_load_n(&pg->owner, __ATOMIC_RELAXED) & PAGE_REMOTE) {
			/* a run other threads free into: their frees count as frees at once, not when the
			 * owner next looks at the run (an owner that never mallocs that size again, or
			 * waits for good, would leave them live in the figures) */
			const _Atomic(uint64_t) *freed = page_freed(pg);
			for (size_t w = 0; w < (class_blocks[pg->cls] + 63u) / 64; w++)
				pend += (uint64_t)__builtin_popcountll(atomic_load_explicit(&freed[w], memory_order_relaxed));
			if (pend > used) pend = used;
		}
		pending += pend;
		st->live_blocks += used - pend;
		st->live_bytes += (size_t)(used - pend) * pg->block_size;
	}
	range_unlock();
	size_t small_live = st->live_blocks;
	st->live_blocks += rs.large_blocks;
	st->live_bytes += rs.large_bytes;
	/* No malloc is counted on its own (one add less on every malloc): a small block malloc
	 * made has been freed (counted by its heap) or is live (its run's used, which counts it
	 * until its owner takes back a remote free); large blocks are counted as they are made.
	 * While other threads run, a free or a collection between the two reads above makes the
	 * sum fall short by a few: it never goes back below a figure already reported. */
	static _Atomic(uint64_t) mallocs_seen;
	uint64_t fb_made, fb_freed;
	alloc_fallback_calls(&fb_made, &fb_freed);
	uint64_t m = small_frees + pending + small_live + rs.large_allocs + fb_made;
	m = m > rmade ? m - rmade : 0;                  /* blocks realloc made are not malloc calls */
	uint64_t seen = atomic_load_explicit(&mallocs_seen, memory_order_relaxed);
	while (m > seen && !atomic_compare_exchange_weak(&mallocs_seen, &seen, m)) {}
	st->calls_malloc = m > seen ? m : seen;
	st->calls_free = small_frees + pending + (rs.large_allocs - rs.large_blocks) + fb_freed;
	st->calls_free = st->calls_free > rfreed ? st->calls_free - rfreed : 0;
	st->calls_mmap = mm_calls();
}

static const char *mode_name(int m)
{
	return m == MODE_RESERVE ? "reserve" : m == MODE_LAZY ? "lazy" : "auto";
}

static const char *route_word(int r)
{
	switch (r) {
	case CONTIG_ROUTE_START: return "start";
	case CONTIG_ROUTE_GROW: return "grow";
	case CONTIG_ROUTE_MMAP: return "mmap";
	case CONTIG_ROUTE_MAPS: return "maps";
	}
	return "?";
}

typedef struct out { int fd; char buf[4096]; size_t n; long err; } out_t;   /* err: a failed write's -errno */

static void out_flush(out_t *o)
{
	if (o->n && o->fd >= 0) {
		long r = os_write(o->fd, o->buf, o->n);
		if (r < 0 && !o->err) o->err = r;
		else if (r >= 0 && (size_t)r < o->n && !o->err) o->err = -ENOSPC;   /* a short write */
	}
	o->n = 0;
}

static void out_piece(out_t *o, const fmtbuf_t *b, bool newline)
{
	size_t n = fmt_len(b);
	if (o->n + n + 1 > sizeof o->buf) out_flush(o);
	memcpy(o->buf + o->n, b->start, n);
	o->n += n;
	if (newline) o->buf[o->n++] = '\n';
}

#define PIECE(o, nl, ...) do { char lb_[400]; fmtbuf_t b_; fmt_init(&b_, lb_, sizeof lb_); \
	fmtbuf_t *b = &b_; __VA_ARGS__; out_piece((o), b, (nl)); } while (0)
#define LINE(o, ...) PIECE(o, true, __VA_ARGS__)
#define JSON(o, ...) PIECE(o, false, __VA_ARGS__)   /* the JSON object is one line */

static void print_text(out_t *o, const contig_stats_t *st)
{
	LINE(o, fmt_str(b, "libcontig: statistics (pid "); fmt_dec(b, (uint64_t)getpid()); fmt_char(b, ')'));
	LINE(o, fmt_str(b, "libcontig:   range       "); fmt_hex(b, st->base); fmt_char(b, '-');
	     fmt_hex(b, st->base + st->range_size); fmt_str(b, " ("); fmt_size(b, st->range_size); fmt_char(b, ')'));
	LINE(o, fmt_str(b, "libcontig:   mode        "); fmt_str(b, mode_name(st->mode));
	     fmt_str(b, st->reserved == st->range_size ? " (whole range reserved)" :
	                st->reserved ? " (part reserved, lazy beyond)" : " (nothing reserved, lazy growth)"));
	LINE(o, fmt_str(b, "libcontig:   reserved    "); fmt_size(b, st->reserved));
	LINE(o, fmt_str(b, "libcontig:   mapped      "); fmt_size(b, st->mapped); fmt_str(b, " of the range made usable"));
	LINE(o, fmt_str(b, "libcontig:   committed   "); fmt_size(b, st->committed); fmt_str(b, " now, peak ");
	     fmt_size(b, st->committed_peak));
	LINE(o, fmt_str(b, "libcontig:   resident    "); fmt_size(b, st->resident); fmt_str(b, " now, peak ");
	     fmt_size(b, st->resident_peak); fmt_str(b, " (whole process)"));
	LINE(o, fmt_str(b, "libcontig:   live        "); fmt_dec(b, st->live_blocks); fmt_str(b, " blocks, ");
	     fmt_dec(b, st->live_bytes); fmt_str(b, " bytes"));
	LINE(o, fmt_str(b, "libcontig:   calls       malloc "); fmt_dec(b, st->calls_malloc);
	     fmt_str(b, ", free "); fmt_dec(b, st->calls_free); fmt_str(b, ", realloc "); fmt_dec(b, st->calls_realloc);
	     fmt_str(b, ", mmap "); fmt_dec(b, st->calls_mmap));
	LINE(o, fmt_str(b, "libcontig:   mmap        "); fmt_size(b, st->mmap_bytes); fmt_str(b, " served from the range"));
	LINE(o, fmt_str(b, "libcontig:   purged      "); fmt_size(b, st->purged_bytes); fmt_str(b, " returned to the OS"));
	LINE(o, fmt_str(b, "libcontig:   fallback    "); fmt_size(b, st->fallback_bytes); fmt_str(b, " outside the range"));
	LINE(o, fmt_str(b, "libcontig:   limit       ");
	     if (st->limit) fmt_size(b, st->limit); else fmt_str(b, "none");
	     fmt_str(b, ", hits "); fmt_dec(b, st->limit_hits));
	LINE(o, fmt_str(b, "libcontig:   collisions  "); fmt_dec(b, st->collisions));
	for (size_t i = 0; i < st->collisions && i < CONTIG_STATS_COLLISIONS; i++)
		LINE(o, fmt_str(b, "libcontig:     "); fmt_hex(b, st->collision[i].addr); fmt_char(b, '-');
		     fmt_hex(b, st->collision[i].addr + st->collision[i].len); fmt_str(b, " found by ");
		     fmt_str(b, route_word(st->collision[i].route)));
}

static void print_json(out_t *o, const contig_stats_t *st)
{
	JSON(o,
	     fmt_str(b, "{\"pid\":"); fmt_dec(b, (uint64_t)getpid());
	     fmt_str(b, ",\"base\":\""); fmt_hex(b, st->base);
	     fmt_str(b, "\",\"size\":"); fmt_dec(b, st->range_size);
	     fmt_str(b, ",\"mode\":\""); fmt_str(b, mode_name(st->mode));
	     fmt_str(b, "\",\"reserved\":"); fmt_dec(b, st->reserved);
	     fmt_str(b, ",\"mapped\":"); fmt_dec(b, st->mapped);
	     fmt_str(b, ",\"committed\":"); fmt_dec(b, st->committed);
	     fmt_str(b, ",\"committed_peak\":"); fmt_dec(b, st->committed_peak);
	     fmt_str(b, ",\"resident\":"); fmt_dec(b, st->resident);
	     fmt_str(b, ",\"resident_peak\":"); fmt_dec(b, st->resident_peak));
	JSON(o,
	     fmt_str(b, ",\"live_blocks\":"); fmt_dec(b, st->live_blocks);
	     fmt_str(b, ",\"live_bytes\":"); fmt_dec(b, st->live_bytes);
	     fmt_str(b, ",\"calls\":{\"malloc\":"); fmt_dec(b, st->calls_malloc);
	     fmt_str(b, ",\"free\":"); fmt_dec(b, st->calls_free);
	     fmt_str(b, ",\"realloc\":"); fmt_dec(b, st->calls_realloc);
	     fmt_str(b, ",\"mmap\":"); fmt_dec(b, st->calls_mmap);
	     fmt_str(b, "},\"mmap_bytes\":"); fmt_dec(b, st->mmap_bytes);
	     fmt_str(b, ",\"purged_bytes\":"); fmt_dec(b, st->purged_bytes);
	     fmt_str(b, ",\"fallback_bytes\":"); fmt_dec(b, st->fallback_bytes);
	     fmt_str(b, ",\"limit\":"); fmt_dec(b, st->limit);
	     fmt_str(b, ",\"limit_hits\":"); fmt_dec(b, st->limit_hits);
	     fmt_str(b, ",\"collision_count\":"); fmt_dec(b, st->collisions);
	     fmt_str(b, ",\"collisions\":["));
	for (size_t i = 0; i < st->collisions && i < CONTIG_STATS_COLLISIONS; i++)
		JSON(o, if (i) fmt_char(b, ',');
		     fmt_str(b, "{\"addr\":\""); fmt_hex(b, st->collision[i].addr);
		     fmt_str(b, "\",\"len\":"); fmt_dec(b, st->collision[i].len);
		     fmt_str(b, ",\"route\":\""); fmt_str(b, route_word(st->collision[i].route)); fmt_str(b, "\"}"));
	LINE(o, fmt_str(b, "]}"));
}

/* The statistics in the form CONTIG_STATS asks for, flushed. */
static void print_stats(out_t *o, const contig_stats_t *st)
{
	if (G.cfg.stats == STATS_JSON) print_json(o, st);
	else print_text(o, st);
	out_flush(o);
}

/* The statistics at exit under CONTIG_STATS (the exit hook is api.c's; the heaps have handed
 * back their remote frees by then). */
void stats_report_exit(void)
{
	if (!G.cfg.stats) return;
	contig_stats_t st;
	stats_collect(&st);
	out_t o = { -1, "", 0, 0 };
	long err = 0;
	char path[sizeof G.cfg.stats_file + 24];
	if (G.cfg.stats_file[0]) {
		fmtbuf_t pb;
		fmt_init(&pb, path, sizeof path);
		fmt_path_pid(&pb, G.cfg.stats_file);        /* %p: the process ID, one file per process */
		o.fd = os_open_write(path);
		if (o.fd < 0) err = o.fd;
		else {
			print_stats(&o, &st);
			os_close(o.fd);
			if (!o.err) return;
			err = o.err;
		}
	}
	o.fd = report_fd();
	o.err = 0;
	if (err) {
		/* the file could not be opened or written: say so, and use stderr */
		LINE(&o, fmt_str(b, "libcontig: CONTIG_STATS_FILE=\""); fmt_str(b, path);
		     fmt_str(b, "\" could not be written (errno "); fmt_dec(b, (uint64_t)-err);
		     fmt_str(b, "); the statistics go to stderr"));
	}
	print_stats(&o, &st);
}

void stats_print_malloc_stats(void)
{
	out_t o = { 2, "", 0, 0 };
	contig_stats_t st;
	contig_ensure_init();
	stats_collect(&st);
	print_text(&o, &st);
	out_flush(&o);
}
