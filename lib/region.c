/* region.c - the range: reservation at start, growth (commit or lazy mapping), foreign mappings,
 * runs of 64 KiB pages (first fit from size bins, coalescing), committed accounting, the limit,
 * and purging. Everything here runs under one lock; the small-block paths never come here. */
#include "internal.h"
#include "maps.h"
#include "leak.h"
#include <errno.h>
#include <sys/mman.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#define NBINS 64
#define CLEAN_STAMP UINT32_MAX

static pthread_mutex_t rlock = PTHREAD_MUTEX_INITIALIZER;

static struct {
	size_t frontier;            /* pages [0, frontier) are usable, allocated or foreign */
	size_t reserved_end;        /* pages [0, reserved_end) lie in our PROT_NONE reservation */
	uint32_t bin[NBINS];        /* first free run of each bin (index + 1) */
	uint64_t binmask;           /* bit b set when bin b is non-empty */
	size_t committed;           /* pages live or dirty */
	size_t committed_peak;      /* pages */
	size_t purged;              /* pages returned to the OS so far */
	size_t limit;               /* pages; 0 = none */
	size_t limit_hits;
	size_t large_bytes, large_blocks;
	size_t mmap_bytes, fallback_bytes;
	uint64_t next_purge;        /* ms clock of the next due purge; UINT64_MAX none */
	uint32_t dirty_runs;        /* free runs that may hold dirty pages */
	int mode;                   /* the mode in force */
	size_t reserved_bytes;      /* reserved PROT_NONE at start */
	size_t ncoll;               /* collisions found */
	contig_collision_t coll[CONTIG_STATS_COLLISIONS];
	size_t notified;            /* collisions passed to the callback */
	char *meta_cur, *meta_end;  /* metadata bump area */
	uint64_t *bitmaps;          /* free live bitmaps, linked through their first word */
} R;

static pthread_cond_t purge_cond = PTHREAD_COND_INITIALIZER;
static int purger;                  /* 0 none, 1 starting or running */
static int purger_idle;             /* the purger waits with no deadline */
static contig_collision_fn coll_fn;
static void notify_collisions(void);
static void *coll_arg;

void region_lock(void) { pthread_mutex_lock(&rlock); }
void region_unlock(void) { pthread_mutex_unlock(&rlock); }
void region_fork_child(void)
{
	/* the purger did not come along: the child starts its own when it frees pages */
	pthread_mutex_init(&rlock, NULL);
	purger = purger_idle = 0;
}

static inline page_t *P(size_t idx) { return &G.pages[idx]; }
static inline uint32_t now_stamp(void) { return (uint32_t)os_now_ms(); }

/* ---- metadata: never freed, outside the range ---- */
static void *meta_alloc_locked(size_t bytes)
{
	bytes = align_up(bytes, 64);
	if ((size_t)(R.meta_end - R.meta_cur) < bytes) {
		size_t chunk = align_up(bytes > ((size_t)1 << 20) ? bytes : ((size_t)1 << 20), OS_PAGE);
		char *m = os_map_meta(chunk, G.cfg.base, G.cfg.base + (G.npages << PAGE_SHIFT));
		if (!m) return NULL;
		leak_note_meta(m, chunk);
		R.meta_cur = m;
		R.meta_end = m + chunk;
	}
	void *p = R.meta_cur;
	R.meta_cur += bytes;
	return p;
}

void *meta_alloc(size_t bytes)
{
	region_lock();
	void *p = meta_alloc_locked(bytes);
	region_unlock();
	return p;
}

/* A small run's out-of-band metadata: its remote_t line, then its live bitmap (returned). */
static uint64_t *bitmap_get_locked(void)
{
	uint64_t *chunk = R.bitmaps;
	if (chunk) R.bitmaps = (uint64_t *)(uintptr_t)chunk[0];
	else chunk = meta_alloc_locked(sizeof(remote_t) + LIVE_BYTES);
	if (!chunk) return NULL;
	memset(chunk, 0, sizeof(remote_t) + LIVE_BYTES);
	return chunk + sizeof(remote_t) / sizeof(uint64_t);
}

static void bitmap_put_locked(uint64_t *bm)
{
	uint64_t *chunk = bm - sizeof(remote_t) / sizeof(uint64_t);
	chunk[0] = (uint64_t)(uintptr_t)R.bitmaps;
	R.bitmaps = chunk;
}

/* ---- collisions ---- */
static const char *route_name(contig_route_t r)
{
	switch (r) {
	case CONTIG_ROUTE_START: return "at start";
	case CONTIG_ROUTE_GROW: return "while growing lazily";
	case CONTIG_ROUTE_MMAP: return "through an mmap-family call";
	case CONTIG_ROUTE_MAPS: return "in /proc/self/maps before using reserved pages";
	}
	return "?";
}

static void collision_locked(uintptr_t lo, uintptr_t hi, contig_route_t route, const char *mapsline)
{
	if (R.ncoll < CONTIG_STATS_COLLISIONS) {
		R.coll[R.ncoll].addr = lo;
		R.coll[R.ncoll].len = hi - lo;
		R.coll[R.ncoll].route = route;
	}
	R.ncoll++;
	if (G.cfg.verbose || G.cfg.on_collision == COLL_ABORT) {
		char buf[400];
		fmtbuf_t b;
		fmt_init(&b, buf, sizeof buf);
		fmt_str(&b, "collision: foreign mapping ");
		fmt_hex(&b, lo);
		fmt_char(&b, '-');
		fmt_hex(&b, hi);
		fmt_str(&b, " inside the range, found ");
		fmt_str(&b, route_name(route));
		if (mapsline && *mapsline) {
			fmt_str(&b, "; /proc/self/maps: ");
			fmt_str(&b, mapsline);
		}
		fmt_str(&b, G.cfg.on_collision == COLL_ABORT ? "; CONTIG_ON_COLLISION=abort" : "; skipped");
		log_line(buf);
	}
	if (G.cfg.on_collision == COLL_ABORT)
		abort();
}

void region_count_collision(uintptr_t addr, size_t len, contig_route_t route)
{
	region_lock();
	collision_locked(addr, addr + len, route, NULL);
	region_unlock();
	notify_collisions();
}

static void notify_collisions(void)
{
	/* Called without the lock, so the callback may allocate. */
	contig_collision_fn fn = coll_fn;
	if (!fn) return;
	for (;;) {
		contig_collision_t c;
		region_lock();
		if (R.notified >= R.ncoll || R.notified >= CONTIG_STATS_COLLISIONS) {
			R.notified = R.ncoll;
			region_unlock();
			return;
		}
		c = R.coll[R.notified++];
		region_unlock();
		fn(&c, coll_arg);
	}
}

EXPORT void contig_set_collision_callback(contig_collision_fn fn, void *arg)
{
	contig_ensure_init();
	region_lock();
	coll_arg = arg;
	coll_fn = fn;
	region_unlock();
	notify_collisions();
}

/* Mark pages touching [lo, hi) foreign. Only pages beyond the frontier or not yet usable can be
 * touched by a foreign mapping, since everything the library made usable is mapped by it. */
static void mark_foreign(uintptr_t lo, uintptr_t hi)
{
	if (lo < G.base) lo = G.base;
	if (hi > G.base + (G.npages << PAGE_SHIFT)) hi = G.base + (G.npages << PAGE_SHIFT);
	if (lo >= hi) return;
	size_t a = (lo - G.base) >> PAGE_SHIFT, b = (align_up(hi, PAGE_SIZE) - G.base) >> PAGE_SHIFT;
	for (size_t i = a; i < b; i++) {
		if (P(i)->kind == PK_UNUSED || P(i)->kind == PK_FOREIGN) {
			P(i)->kind = PK_FOREIGN;
			P(i)->npages = 0;
		}
	}
}

typedef struct foreign_scan {
	contig_route_t route;
	int own_reserved;           /* PROT_NONE anonymous areas are ours (reservation), not foreign */
	int found;
	uintptr_t lo, hi;
} foreign_scan_t;

static int foreign_cb(const maps_entry_t *m, void *arg)
{
	foreign_scan_t *fs = arg;
	if (fs->own_reserved && m->anon && m->perms[0] == '-' && m->perms[1] == '-' && m->perms[2] == '-')
		return 0;
	uintptr_t lo = m->lo < fs->lo ? fs->lo : m->lo;
	uintptr_t hi = m->hi > fs->hi ? fs->hi : m->hi;
	bool known = true;
	for (uintptr_t a = align_down(lo, PAGE_SIZE); a < hi && known; a += PAGE_SIZE) {
		uint8_t k = G.pages[(a - G.base) >> PAGE_SHIFT].kind;
		known = k == PK_FOREIGN || k == PK_MMAP_FIXED;
	}
	if (known) return 0;                   /* found before: recorded once */
	mark_foreign(lo, hi);
	collision_locked(lo, hi, fs->route, m->line);
	fs->found++;
	return 0;
}

/* Scan [lo, hi) for foreign mappings, mark and record them. Returns how many were found. */
static int scan_foreign(uintptr_t lo, uintptr_t hi, contig_route_t route, int own_reserved)
{
	foreign_scan_t fs = { route, own_reserved, 0, lo, hi };
	maps_scan(lo, hi, foreign_cb, &fs);
	return fs.found;
}

/* ---- free runs ---- */
static unsigned bin_of(size_t n)
{
	if (n <= 32) return (unsigned)n - 1;
	unsigned k = 63u - (unsigned)__builtin_clzl(n);          /* 2^k <= n, k >= 5 */
	unsigned b = 32u + (k - 5u) * 4u + (unsigned)((n >> (k - 2)) & 3u);
	return b < NBINS ? b : NBINS - 1;
}

static void bin_insert(size_t idx)
{
	page_t *h = P(idx);
	unsigned b = bin_of(h->npages);
	h->prev = 0;
	h->next = R.bin[b];
	if (R.bin[b]) P(R.bin[b] - 1)->prev = (uint32_t)idx + 1;
	R.bin[b] = (uint32_t)idx + 1;
	R.binmask |= 1ull << b;
}

static void bin_remove(size_t idx)
{
	page_t *h = P(idx);
	unsigned b = bin_of(h->npages);
	if (h->prev) P(h->prev - 1)->next = h->next;
	else R.bin[b] = h->next;
	if (h->next) P(h->next - 1)->prev = h->prev;
	if (!R.bin[b]) R.binmask &= ~(1ull << b);
	if (h->flags & PF_RUNDIRTY) R.dirty_runs--;
}

/* Make [idx, idx+n) one free run in its bin, merging with free neighbours. */
static void run_insert_free(size_t idx, size_t n, uint32_t stamp, bool dirty)
{
	if (idx > 0 && P(idx - 1)->kind == PK_FREE) {
		size_t ph = idx - 1 - P(idx - 1)->head_off;
		page_t *prev = P(ph);
		bin_remove(ph);
		if (prev->flags & PF_RUNDIRTY) {
			dirty = true;
			if (prev->stamp < stamp) stamp = prev->stamp;
		}
		n += idx - ph;
		idx = ph;
	}
	if (idx + n < R.frontier && P(idx + n)->kind == PK_FREE) {
		page_t *next = P(idx + n);
		bin_remove(idx + n);
		if (next->flags & PF_RUNDIRTY) {
			dirty = true;
			if (next->stamp < stamp) stamp = next->stamp;
		}
		n += next->npages;
	}
	page_t *h = P(idx);
	h->kind = PK_FREE;
	h->npages = (uint32_t)n;
	h->head_off = 0;
	h->stamp = dirty ? stamp : CLEAN_STAMP;
	h->flags = (uint8_t)((h->flags & ~PF_RUNDIRTY) | (dirty ? PF_RUNDIRTY : 0));
	if (n > 1) {
		page_t *t = P(idx + n - 1);
		t->kind = PK_FREE;
		t->npages = (uint32_t)n;
		t->head_off = (uint32_t)(n - 1);
	}
	if (dirty) {
		R.dirty_runs++;
		uint64_t due = os_now_ms() + G.cfg.purge_ms;
		if (due < R.next_purge) R.next_purge = due;
		if (purger_idle) pthread_cond_signal(&purge_cond);
	}
	bin_insert(idx);
}

/* First fit: the bin of n (checking sizes, for the ranged bins), then any larger non-empty bin. */
static size_t find_fit(size_t n)
{
	unsigned b = bin_of(n);
	if (b >= 32 || b == NBINS - 1) {
		for (uint32_t i = R.bin[b]; i; i = P(i - 1)->next)
			if (P(i - 1)->npages >= n) return i - 1;
		b++;
	}
	if (b >= NBINS) return SIZE_MAX;
	uint64_t m = R.binmask & (~0ull << b);
	if (!m) return SIZE_MAX;
	b = (unsigned)__builtin_ctzll(m);
	if (b == NBINS - 1) {
		for (uint32_t i = R.bin[b]; i; i = P(i - 1)->next)
			if (P(i - 1)->npages >= n) return i - 1;
		return SIZE_MAX;
	}
	return R.bin[b] - 1;
}

/* ---- purging ---- */
static size_t purge_run(size_t idx)
{
	page_t *h = P(idx);
	size_t n = h->npages, done = 0;
	for (size_t i = idx; i < idx + n;) {
		if (!(P(i)->flags & PF_DIRTY)) { i++; continue; }
		size_t j = i;
		while (j < idx + n && (P(j)->flags & PF_DIRTY)) P(j++)->flags &= (uint8_t)~PF_DIRTY;
		os_decommit(page_addr(i), (j - i) << PAGE_SHIFT);
		done += j - i;
		i = j;
	}
	h->flags &= (uint8_t)~PF_RUNDIRTY;
	h->stamp = CLEAN_STAMP;
	R.dirty_runs--;
	R.committed -= done;
	R.purged += done;
	return done;
}

/* Purge the free runs freed at least purge_ms ago (all of them when all). */
static size_t purge_locked(bool all)
{
	uint64_t now = os_now_ms();
	uint64_t next = UINT64_MAX;
	size_t done = 0;
	if (!R.dirty_runs) { R.next_purge = UINT64_MAX; return 0; }
	for (unsigned b = 0; b < NBINS; b++) {
		for (uint32_t i = R.bin[b]; i; i = P(i - 1)->next) {
			page_t *h = P(i - 1);
			if (!(h->flags & PF_RUNDIRTY)) continue;
			uint32_t age = (uint32_t)now - h->stamp;        /* wraps safely every 49 days */
			if (all || age >= G.cfg.purge_ms)
				done += purge_run(i - 1);
			else if (now + (G.cfg.purge_ms - age) < next)
				next = now + (G.cfg.purge_ms - age);
		}
	}
	R.next_purge = next;
	return done;
}

static inline void maybe_purge_locked(void)
{
	if (R.next_purge != UINT64_MAX && os_now_ms() >= R.next_purge)
		purge_locked(false);
}

void region_maybe_purge(void)
{
	if (R.next_purge == UINT64_MAX) return;
	region_lock();
	maybe_purge_locked();
	region_unlock();
}

size_t region_purge(bool all)
{
	region_lock();
	size_t n = purge_locked(all);
	region_unlock();
	return n << PAGE_SHIFT;
}

/* ---- growth ---- */
typedef struct overlap { uintptr_t lo, hi; char line[200]; int found; } overlap_t;

static int overlap_cb(const maps_entry_t *m, void *arg)
{
	overlap_t *o = arg;
	o->lo = m->lo;
	o->hi = m->hi;
	size_t n = strlen(m->line);
	if (n >= sizeof o->line) n = sizeof o->line - 1;
	memcpy(o->line, m->line, n);
	o->line[n] = 0;
	o->found = 1;
	return 1;
}

/* Make pages [a, b) usable; foreign pages inside are skipped and recorded. Adds what it made
 * usable as free runs and moves the frontier. Returns 0, or -errno when it could not go on. */
static int make_usable(size_t a, size_t b)
{
	size_t i = a;
	int err = 0, retries = 0;
	if (G.cfg.check_maps && a < R.reserved_end) {
		/* Raw system calls can replace our reservation behind our back: look before using it. */
		size_t e = b < R.reserved_end ? b : R.reserved_end;
		scan_foreign(page_addr(a), page_addr(e), CONTIG_ROUTE_MAPS, 1);
	}
	while (i < b) {
		if (P(i)->kind != PK_UNUSED) { i++; R.frontier = i; continue; }   /* foreign, or a caller's fixed map */
		size_t j = i;
		while (j < b && P(j)->kind == PK_UNUSED) j++;
		if (i < R.reserved_end) {
			size_t k = j < R.reserved_end ? j : R.reserved_end;
			err = os_commit(page_addr(i), (k - i) << PAGE_SHIFT);
			if (err) break;
			R.frontier = k;
			run_insert_free(i, k - i, CLEAN_STAMP, false);
			i = k;
			continue;
		}
		err = os_map_fixed_rw(page_addr(i), (j - i) << PAGE_SHIFT);
		if (err == -EEXIST) {
			overlap_t o = { 0, 0, "", 0 };
			maps_scan(page_addr(i), page_addr(j), overlap_cb, &o);
			if (!o.found) {
				if (++retries > 3) break;      /* it came and went; try again a few times */
				continue;
			}
			/* the whole foreign mapping (within the range), not just the part in this step */
			uintptr_t lo = o.lo < G.base ? G.base : o.lo;
			uintptr_t top = G.base + (G.npages << PAGE_SHIFT);
			uintptr_t hi = o.hi > top ? top : o.hi;
			mark_foreign(lo, hi);
			collision_locked(lo, hi, CONTIG_ROUTE_GROW, o.line);
			err = 0;
			continue;                          /* the loop now stops before the foreign pages */
		}
		if (err) break;
		R.frontier = j;
		run_insert_free(i, j - i, CLEAN_STAMP, false);
		i = j;
	}
	if (err && G.cfg.verbose) {
		char buf[160];
		fmtbuf_t bb;
		fmt_init(&bb, buf, sizeof buf);
		fmt_str(&bb, "cannot grow the heap at ");
		fmt_hex(&bb, page_addr(i));
		fmt_str(&bb, err == -ENOMEM ? ": out of address space (RLIMIT_AS?)" : ": mapping refused");
		log_line(buf);
	}
	return err;
}

/* Grow so that a run of n pages may fit. 0 when something was added, -1 when nothing can be. */
static int grow(size_t n)
{
	size_t f = R.frontier;
	if (f >= G.npages) return -1;
	size_t have = 0;
	if (f > 0 && P(f - 1)->kind == PK_FREE)
		have = P(f - 1)->npages;                   /* the free run at the top extends */
	size_t need = n > have ? n - have : 1;
	/* Steps grow with the heap (an eighth of it, 4 MiB to 1 GiB): few system calls and few
	 * reads of /proc/self/maps however large it gets. */
	size_t step = f / 8;
	if (step < (GROW_STEP >> PAGE_SHIFT)) step = GROW_STEP >> PAGE_SHIFT;
	if (step > ((size_t)1 << (30 - PAGE_SHIFT))) step = (size_t)1 << (30 - PAGE_SHIFT);
	size_t want = need > step ? need : step;
	size_t b = f + want > G.npages ? G.npages : f + want;
	make_usable(f, b);
	if (R.frontier == f && want > need) {
		/* refused (RLIMIT_AS near its end?): just what this request needs */
		b = f + need > G.npages ? G.npages : f + need;
		make_usable(f, b);
	}
	return R.frontier > f ? 0 : -1;
}

/* ---- runs ---- */
static void open_pages(size_t a, size_t b);
static size_t run_len(const page_t *h)
{
	return h->kind == PK_SMALL ? class_pages[h->cls] : h->npages;
}

page_t *region_alloc(size_t n, uint8_t kind, int flags)
{
	page_t *h = NULL;
	size_t idx;
	if (n == 0 || n > G.npages) { errno = ENOMEM; return NULL; }
	region_lock();
	maybe_purge_locked();
	for (;;) {
		idx = find_fit(n);
		if (idx != SIZE_MAX) break;
		if (grow(n) != 0) goto fail;
	}
	h = P(idx);
	size_t len = h->npages;
	bool dirty = h->flags & PF_RUNDIRTY;
	uint32_t stamp = h->stamp;
	/* Small runs come from the end of the free run, everything else from its start: a freed
	 * large block's first page is then not at once a small run's, so a second free of it is
	 * still caught, and large blocks keep free pages after them to grow into. */
	size_t take = kind == PK_SMALL ? idx + len - n : idx;
	size_t clean = 0;
	for (size_t i = take; i < take + n; i++) clean += !(P(i)->flags & PF_DIRTY);
	if (R.limit && R.committed + clean > R.limit) {
		purge_locked(true);
		clean = n;        /* everything free is clean now, the run we picked too */
		if (R.committed + clean > R.limit) {
			R.limit_hits++;
			if (G.cfg.verbose) log_line("CONTIG_LIMIT reached: allocation refused with ENOMEM");
			goto fail;
		}
		dirty = false;
	}
	bin_remove(idx);
	size_t rest = take == idx ? idx + n : idx;
	idx = take;
	h = P(idx);
	for (size_t i = idx; i < idx + n; i++) {
		page_t *pg = P(i);
		uint8_t f = pg->flags & (uint8_t)~(PF_RUNDIRTY | PF_NEEDZERO);
		if ((flags & RUN_ZERO) && (f & PF_DIRTY)) f |= PF_NEEDZERO;
		pg->flags = f | PF_DIRTY;
		pg->kind = i > idx ? PK_CONT : kind;
		pg->head_off = (uint32_t)(i - idx);
	}
	if (len > n) {
		/* the rest stays free, with the state it had (its neighbours are not free: no merge) */
		P(rest)->kind = PK_FREE;
		run_insert_free(rest, len - n, dirty ? stamp : CLEAN_STAMP, dirty);
	}
	R.committed += clean;
	if (R.committed > R.committed_peak) R.committed_peak = R.committed;
	open_pages(idx, idx + n);
	h->kind = kind;
	if (kind == PK_SMALL) {
		uint64_t *bm = bitmap_get_locked();
		if (!bm) goto undo;
		memset(h, 0, offsetof(page_t, kind));
		h->live = bm;
	} else {
		h->npages = (uint32_t)n;
		h->head_off = 0;
		h->usable = n << PAGE_SHIFT;
		if (kind == PK_LARGE) { R.large_bytes += n << PAGE_SHIFT; R.large_blocks++; }
	}
	if (kind == PK_MMAP) {
		h->map_lo = 0;
		h->map_hi = n << PAGE_SHIFT;
		h->holes = NULL;
		R.mmap_bytes += n << PAGE_SHIFT;
	}
	region_unlock();
	if ((flags & RUN_ZERO) && kind == PK_MMAP) {
		/* a fresh mapping reads as zero without the pages being touched */
		for (size_t i = idx; i < idx + n;) {
			if (!(P(i)->flags & PF_NEEDZERO)) { i++; continue; }
			size_t j = i;
			while (j < idx + n && (P(j)->flags & PF_NEEDZERO)) P(j++)->flags &= (uint8_t)~PF_NEEDZERO;
			os_decommit(page_addr(i), (j - i) << PAGE_SHIFT);
			i = j;
		}
	} else if (flags & RUN_ZERO) {
		for (size_t i = idx; i < idx + n; i++) {
			if (P(i)->flags & PF_NEEDZERO) {
				memset((void *)page_addr(i), 0, PAGE_SIZE);
				P(i)->flags &= (uint8_t)~PF_NEEDZERO;
			}
		}
	}
	notify_collisions();
	return h;
undo:
	h->kind = PK_FREE;
	run_insert_free(idx, n, now_stamp(), true);
fail:
	region_unlock();
	notify_collisions();
	errno = ENOMEM;
	return NULL;
}

static void free_locked(page_t *h)
{
	size_t idx = page_idx(h), n = run_len(h);
	if (h->kind == PK_SMALL) bitmap_put_locked(h->live);
	else if (h->kind == PK_LARGE) { R.large_bytes -= n << PAGE_SHIFT; R.large_blocks--; }
	for (size_t i = idx; i < idx + n; i++) {
		if (P(i)->flags & PF_PROT) {
			/* the caller changed protections inside the block: make it plain memory again */
			os_commit(page_addr(idx), n << PAGE_SHIFT);
			for (size_t k = idx; k < idx + n; k++) P(k)->flags &= (uint8_t)~PF_PROT;
			break;
		}
	}
	h->kind = PK_FREE;
	h->flags |= PF_DIRTY;
	run_insert_free(idx, n, now_stamp(), true);
	if (G.cfg.purge_ms == 0) purge_locked(true);
	else maybe_purge_locked();
}

/* The purger: freed pages go back to the OS within purge_ms even when the program makes no
 * further call. Started on the first free of pages; never touches the heaps. */
static void *purger_main(void *arg)
{
	(void)arg;
	region_lock();
	for (;;) {
		maybe_purge_locked();
		if (R.next_purge == UINT64_MAX) {
			/* Nothing dirty: linger a little, then end, so that the purger never keeps a
			 * process alive whose last thread has gone (pthread_exit from main, a child
			 * forked from a thread). The next free of pages starts it again. */
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += 200000000L;
			if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
			purger_idle = 1;
			pthread_cond_timedwait(&purge_cond, &rlock, &ts);
			purger_idle = 0;
			if (R.next_purge == UINT64_MAX) {
				purger = 0;
				region_unlock();
				return NULL;
			}
			continue;
		}
		uint64_t due = R.next_purge;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t now = os_now_ms();
		uint64_t wait = due > now ? due - now : 0;
		ts.tv_sec += (time_t)(wait / 1000);
		ts.tv_nsec += (long)(wait % 1000) * 1000000L + 2000000L;   /* past the coarse clock's tick */
		while (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
		pthread_cond_timedwait(&purge_cond, &rlock, &ts);
	}
	return NULL;
}

static void purger_start(void)
{
	pthread_condattr_t ca;
	pthread_attr_t at;
	pthread_t t;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&purge_cond, &ca);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 64 << 10);
	if (pthread_create(&t, &at, purger_main, NULL) != 0) purger = 0;
	pthread_attr_destroy(&at);
}

void region_free(page_t *h)
{
	bool start = false;
	region_lock();
	free_locked(h);
	if (!purger && R.dirty_runs && G.cfg.purge_ms && !G.slow_only && !heap_locks_held) {
		/* (not while this thread holds a heap lock: pthread_create allocates) */   /* leak tracking: no thread, whose TLS would show as a leak */
		purger = 1;
		start = true;
	}
	region_unlock();
	if (start) purger_start();
}

/* Resize a live PK_LARGE/PK_MMAP run in place: shrink gives the tail back; grow takes the free
 * run right after it (growing the range if it is at the top). 0 on success, -1 when it cannot. */
int region_resize(page_t *h, size_t newn)
{
	size_t idx = page_idx(h), n = h->npages;
	int ret = -1;
	if (newn == n) return 0;
	region_lock();
	if (newn < n) {
		size_t tail = idx + newn;
		h->npages = (uint32_t)newn;
		if (h->kind == PK_LARGE) R.large_bytes -= (n - newn) << PAGE_SHIFT;
		if (h->kind == PK_MMAP) R.mmap_bytes -= (n - newn) << PAGE_SHIFT;
		P(tail)->kind = PK_FREE;
		run_insert_free(tail, n - newn, now_stamp(), true);
		ret = 0;
		goto out;
	}
	size_t need = newn - n, nx = idx + n;
	if (nx + need > G.npages) goto out;
	if (nx >= R.frontier || (P(nx)->kind == PK_FREE && nx + P(nx)->npages == R.frontier && P(nx)->npages < need)) {
		/* At the top: grow the range first (growth merges into the free run after us). */
		if (grow(need) != 0) goto out;
	}
	if (nx >= R.frontier || P(nx)->kind != PK_FREE || P(nx)->npages < need) goto out;
	size_t flen = P(nx)->npages;
	bool dirty = P(nx)->flags & PF_RUNDIRTY;
	uint32_t stamp = P(nx)->stamp;
	size_t clean = 0;
	for (size_t i = nx; i < nx + need; i++) clean += !(P(i)->flags & PF_DIRTY);
	if (R.limit && R.committed + clean > R.limit) { R.limit_hits++; goto out; }
	bin_remove(nx);
	for (size_t i = nx; i < nx + need; i++) {
		P(i)->kind = PK_CONT;
		P(i)->head_off = (uint32_t)(i - idx);
		P(i)->flags = (uint8_t)((P(i)->flags & ~(PF_RUNDIRTY | PF_NEEDZERO)) | PF_DIRTY);
	}
	if (flen > need) {
		/* the rest stays free; its head is rewritten, the pages before it are ours now */
		P(nx + need)->kind = PK_FREE;
		P(nx + need)->flags &= (uint8_t)~PF_RUNDIRTY;
		run_insert_free(nx + need, flen - need, dirty ? stamp : CLEAN_STAMP, dirty);
	}
	R.committed += clean;
	if (R.committed > R.committed_peak) R.committed_peak = R.committed;
	open_pages(nx, nx + need);
	h->npages = (uint32_t)newn;
	if (h->kind == PK_LARGE) R.large_bytes += need << PAGE_SHIFT;
	if (h->kind == PK_MMAP) R.mmap_bytes += need << PAGE_SHIFT;
	ret = 0;
out:
	region_unlock();
	return ret;
}

/* ---- start ---- */
static size_t auto_headroom(uint64_t rl)
{
	/* Room left under RLIMIT_AS for what the heap does not own: thread stacks, libraries, file
	 * mappings, the kernel's own mmaps. A quarter of the limit, at least 256 MiB. */
	size_t h = (size_t)(rl / 4);
	return h < ((size_t)256 << 20) ? ((size_t)256 << 20) : h;
}

/* Reserve [0, end) pages PROT_NONE except foreign pages. Returns the pages reserved. */
static size_t reserve_gaps(size_t end)
{
	size_t i = 0, total = 0;
	if (R.ncoll == 0 && os_reserve_fixed(page_addr(0), end << PAGE_SHIFT) == 0) {
		/* the usual case: nothing foreign, one mapping, no walk over the descriptors */
		R.reserved_end = end;
		return end;
	}
	while (i < end) {
		if (P(i)->kind == PK_FOREIGN) { i++; continue; }
		size_t j = i;
		while (j < end && P(j)->kind != PK_FOREIGN) j++;
		int err = os_reserve_fixed(page_addr(i), (j - i) << PAGE_SHIFT);
		if (err == -EEXIST) {
			/* Something appeared since the scan: record it and go around. */
			if (scan_foreign(page_addr(i), page_addr(j), CONTIG_ROUTE_START, 0) == 0) return total;
			continue;
		}
		if (err) return total;
		total += j - i;
		i = j;
		R.reserved_end = j;
	}
	return total;
}

int region_init(void)
{
	const config_t *c = &G.cfg;
	char buf[300];
	fmtbuf_t b;

	R.next_purge = UINT64_MAX;
	G.npages = c->size >> PAGE_SHIFT;
	for (;;) {
		/* 64 bytes per 64 KiB page: 1/1024 of the range, touched only where the heap is */
		G.pages = os_map_meta(G.npages * sizeof(page_t), c->base, c->base + (G.npages << PAGE_SHIFT));
		if (G.pages || G.npages <= 16) break;
		G.npages /= 2;
	}
	if (!G.pages) {
		log_line("cannot map the page descriptors (RLIMIT_AS?); every allocation will fail");
		G.npages = 0;
		return -1;
	}
	if (G.npages != c->size >> PAGE_SHIFT) {
		fmt_init(&b, buf, sizeof buf);
		fmt_str(&b, "CONTIG_SIZE: no room for the page descriptors of ");
		fmt_size(&b, c->size);
		fmt_str(&b, " (RLIMIT_AS or overcommit); using ");
		fmt_size(&b, G.npages << PAGE_SHIFT);
		log_line(buf);
	}
	if (c->limit_kind == LIMIT_SIZE)
		R.limit = align_up(c->limit, PAGE_SIZE) >> PAGE_SHIFT;
	else if (c->limit_kind == LIMIT_CGROUP) {
		char where[300] = "";
		size_t lim = cgroup_memory_limit(where, sizeof where);
		fmt_init(&b, buf, sizeof buf);
		if (!lim) {
			fmt_str(&b, "CONTIG_LIMIT=cgroup: the process's memory cgroup has no limit; no limit");
		} else {
			/* Headroom for what the cgroup charges that is not the heap: binaries, stacks,
			 * page cache, other processes. An eighth of the limit, at least 16 MiB. */
			size_t head = lim / 8 < ((size_t)16 << 20) ? ((size_t)16 << 20) : lim / 8;
			size_t eff = lim > 2 * head ? lim - head : lim / 2;
			R.limit = eff >> PAGE_SHIFT;
			if (!R.limit) R.limit = 1;
			fmt_str(&b, "CONTIG_LIMIT=cgroup: ");
			fmt_str(&b, where);
			fmt_str(&b, " is ");
			fmt_size(&b, lim);
			fmt_str(&b, "; heap limit ");
			fmt_size(&b, R.limit << PAGE_SHIFT);
			fmt_str(&b, " (headroom ");
			fmt_size(&b, lim - (R.limit << PAGE_SHIFT));
			fmt_char(&b, ')');
		}
		log_verbose(buf);
	}

	/* Route 1: whatever is already mapped in the range. */
	scan_foreign(c->base, c->base + (G.npages << PAGE_SHIFT), CONTIG_ROUTE_START, 0);

	uint64_t rl;
	os_getrlimit_as(&rl);
	size_t want = 0;
	const char *why = "";
	R.mode = c->mode;
	switch (c->mode) {
	case MODE_RESERVE: want = G.npages; why = "CONTIG_MODE=reserve"; break;
	case MODE_LAZY: want = 0; why = "CONTIG_MODE=lazy"; break;
	default:
		if (rl == UINT64_MAX) {
			want = G.npages;
			why = "auto: no RLIMIT_AS, reserving the whole range";
		} else {
			size_t vm = maps_vm_size(), head = auto_headroom(rl);
			size_t room = rl > vm + head ? (size_t)(rl - vm - head) : 0;
			want = room >> PAGE_SHIFT;
			if (want > G.npages) want = G.npages;
			why = want == G.npages ? "auto: RLIMIT_AS leaves room for the whole range"
			                       : "auto: RLIMIT_AS is below the range; reserving part, growing lazily beyond";
		}
		break;
	}
	size_t got = want ? reserve_gaps(want) : 0;
	if (got < want && c->mode == MODE_RESERVE) {
		fmt_init(&b, buf, sizeof buf);
		fmt_str(&b, "CONTIG_MODE=reserve: could reserve only ");
		fmt_size(&b, got << PAGE_SHIFT);
		fmt_str(&b, " of the range (RLIMIT_AS or a foreign mapping); growing lazily beyond");
		log_line(buf);
	}
	R.reserved_bytes = got << PAGE_SHIFT;
	if (c->verbose) {
		fmt_init(&b, buf, sizeof buf);
		fmt_str(&b, "range ");
		fmt_hex(&b, G.base);
		fmt_char(&b, '-');
		fmt_hex(&b, G.base + (G.npages << PAGE_SHIFT));
		fmt_str(&b, "; ");
		fmt_str(&b, why);
		fmt_str(&b, "; reserved ");
		fmt_size(&b, R.reserved_bytes);
		if (rl != UINT64_MAX) {
			fmt_str(&b, "; RLIMIT_AS ");
			fmt_size(&b, rl);
			fmt_str(&b, ", headroom ");
			fmt_size(&b, auto_headroom(rl));
		}
		log_line(buf);
	}
	return 0;
}

void region_set_limit_pages(size_t pages) { R.limit = pages; }

void region_get_stats(region_stats_t *rs)
{
	region_lock();
	rs->reserved = R.reserved_bytes;
	rs->mapped = R.frontier << PAGE_SHIFT;
	rs->committed = R.committed << PAGE_SHIFT;
	rs->committed_peak = R.committed_peak << PAGE_SHIFT;
	rs->purged = R.purged << PAGE_SHIFT;
	rs->limit = R.limit << PAGE_SHIFT;
	rs->limit_hits = R.limit_hits;
	rs->large_bytes = R.large_bytes;
	rs->large_blocks = R.large_blocks;
	rs->mmap_bytes = R.mmap_bytes;
	rs->fallback_bytes = R.fallback_bytes;
	rs->collisions = R.ncoll;
	memcpy(rs->coll, R.coll, sizeof rs->coll);
	rs->mode = R.mode;
	region_unlock();
}

/* Cut a live PK_LARGE run down to pages [lead, lead+keep) of it, freeing the rest. */
page_t *region_trim(page_t *h, size_t lead, size_t keep)
{
	size_t idx = page_idx(h), n = h->npages;
	page_t *nh = P(idx + lead);
	region_lock();
	if (lead) {
		nh->kind = h->kind;
		nh->head_off = 0;
		for (size_t i = 1; i < keep; i++) P(idx + lead + i)->head_off = (uint32_t)i;
		h->kind = PK_FREE;
		run_insert_free(idx, lead, now_stamp(), true);
	}
	nh->npages = (uint32_t)keep;
	nh->usable = keep << PAGE_SHIFT;
	if (lead + keep < n) {
		P(idx + lead + keep)->kind = PK_FREE;
		run_insert_free(idx + lead + keep, n - lead - keep, now_stamp(), true);
	}
	if (nh->kind == PK_LARGE) R.large_bytes -= (n - keep) << PAGE_SHIFT;
	region_unlock();
	return nh;
}

/* ---- served mappings ---- */
size_t region_frontier(void) { return R.frontier; }

void region_count_fallback(size_t bytes)
{
	region_lock();
	R.fallback_bytes += bytes;
	region_unlock();
}

/* The free run holding page i, or SIZE_MAX. Interior descriptors of free runs are not kept
 * exact, so this walks the bins: it serves only the rare MAP_FIXED calls into the range. */
static size_t free_run_holding(size_t i)
{
	for (unsigned b = 0; b < NBINS; b++)
		for (uint32_t k = R.bin[b]; k; k = P(k - 1)->next)
			if (i >= k - 1 && i < k - 1 + P(k - 1)->npages) return k - 1;
	return SIZE_MAX;
}

static int classify_locked(size_t i, page_t **head)
{
	page_t *pg = P(i);
	*head = NULL;
	if (pg->kind == PK_MMAP_FIXED) return PC_FIXED;
	if (pg->kind == PK_FOREIGN) return PC_FOREIGN;
	if (i >= R.frontier) return PC_UNUSED;
	if (pg->kind == PK_FREE || pg->kind == PK_CONT) {
		if (free_run_holding(i) != SIZE_MAX) return PC_FREE;
	}
	page_t *h = pg->kind == PK_CONT ? pg - pg->head_off : pg;
	*head = h;
	if (h->kind == PK_MMAP) return PC_MMAP;
	if (h->kind == PK_SMALL || h->kind == PK_LARGE) return PC_HEAP;
	return PC_FREE;
}

int region_classify(size_t i, page_t **head)
{
	region_lock();
	int c = classify_locked(i, head);
	region_unlock();
	return c;
}

/* Our own anonymous mapping back over [addr, addr+len), as the range had it. */
/* Our own anonymous mapping back over pages [a, b), as the range had it, except that pages
 * below the frontier come back PROT_NONE: the caller unmapped them, so touching them must fault
 * as it would with the kernel. They are made RW again when the heap hands them out (PF_NONE). */
static void restore_ours(size_t a, size_t b)
{
	uintptr_t lo = page_addr(a);
	size_t len = (b - a) << PAGE_SHIFT;
	if (a >= R.frontier && a >= R.reserved_end) { os_munmap((void *)lo, len); return; }  /* lazy part */
	os_mmap((void *)lo, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	if (a < R.frontier)
		for (size_t i = a; i < b; i++) P(i)->flags |= PF_NONE;
}

/* Pages [a, b) are about to be handed out: make the PROT_NONE ones usable again. */
static void open_pages(size_t a, size_t b)
{
	for (size_t i = a; i < b;) {
		if (!(P(i)->flags & PF_NONE)) { i++; continue; }
		size_t j = i;
		while (j < b && (P(j)->flags & PF_NONE)) P(j++)->flags &= (uint8_t)~PF_NONE;
		os_commit(page_addr(i), (j - i) << PAGE_SHIFT);
		i = j;
	}
}

/* Give pages [a, b) of served mapping h back to the heap: our mapping goes back over them, they
 * read as zero, and they join the free runs. What is left after b becomes a run of its own. */
void region_mmap_release(page_t *h, size_t a, size_t b)
{
	size_t idx = page_idx(h), end = idx + h->npages;
	region_lock();
	restore_ours(a, b);
	if (b < end) {
		page_t *t = P(b);
		size_t cut = (b - idx) << PAGE_SHIFT;
		size_t lo = h->map_lo, hi = h->map_hi;
		t->kind = PK_MMAP;
		t->npages = (uint32_t)(end - b);
		t->head_off = 0;
		for (size_t i = b + 1; i < end; i++) P(i)->head_off = (uint32_t)(i - b);
		t->map_lo = lo > cut ? lo - cut : 0;
		t->map_hi = hi > cut ? hi - cut : 0;
		t->holes = NULL;                        /* runs with holes are released whole */
	}
	if (a > idx) {
		h->npages = (uint32_t)(a - idx);
		if (h->map_hi > ((a - idx) << PAGE_SHIFT)) h->map_hi = (a - idx) << PAGE_SHIFT;
	}
	for (size_t i = a; i < b; i++) {
		if (P(i)->flags & PF_DIRTY) R.committed--;
		P(i)->flags &= (uint8_t)~(PF_DIRTY | PF_PROT);
	}
	R.mmap_bytes -= (b - a) << PAGE_SHIFT;
	P(a)->kind = PK_FREE;
	run_insert_free(a, b - a, CLEAN_STAMP, false);
	region_unlock();
}

/* Pages [a, b) become the caller's for a MAP_FIXED mapping: each must be free or beyond the
 * frontier (or the caller's fixed pages already). 0, or -1 when one is not. */
int region_fixed_take(size_t a, size_t b)
{
	page_t *hd;
	region_lock();
	for (size_t i = a; i < b; i++) {
		int c = classify_locked(i, &hd);
		if (c != PC_FREE && c != PC_UNUSED && c != PC_FIXED) { region_unlock(); return -1; }
	}
	for (size_t i = a; i < b;) {
		if (P(i)->kind == PK_MMAP_FIXED || i >= R.frontier) {
			if (P(i)->kind != PK_MMAP_FIXED) { P(i)->kind = PK_MMAP_FIXED; P(i)->npages = 0; }
			i++;
			continue;
		}
		size_t s = free_run_holding(i);
		size_t e = s + P(s)->npages;
		bool dirty = P(s)->flags & PF_RUNDIRTY;
		uint32_t stamp = P(s)->stamp;
		size_t stop = e < b ? e : b;
		bin_remove(s);
		for (size_t k = i; k < stop; k++) {
			if (P(k)->flags & PF_DIRTY) { R.committed--; os_decommit(page_addr(k), PAGE_SIZE); }
			P(k)->flags &= (uint8_t)~(PF_DIRTY | PF_RUNDIRTY | PF_NONE);
			P(k)->kind = PK_MMAP_FIXED;
			P(k)->npages = 0;
		}
		if (s < i) { P(s)->kind = PK_FREE; run_insert_free(s, i - s, stamp, dirty); }
		if (stop < e) { P(stop)->kind = PK_FREE; run_insert_free(stop, e - stop, stamp, dirty); }
		i = stop;
	}
	region_unlock();
	return 0;
}

/* The caller unmapped all of fixed page i: it is ours again. */
void region_fixed_give_back(size_t i)
{
	region_lock();
	restore_ours(i, i + 1);
	if (i < R.frontier) {
		P(i)->kind = PK_FREE;
		P(i)->flags &= (uint8_t)~(PF_DIRTY | PF_PROT);
		run_insert_free(i, 1, CLEAN_STAMP, false);
	} else
		P(i)->kind = PK_UNUSED;
	region_unlock();
}
