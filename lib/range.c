/* range.c - the range: the page descriptors, the reservation at start, growth (commit or lazy
 * mapping), foreign mappings and collisions on every route, the maps audit before reserved pages
 * are used, and the library's metadata. Everything here runs under the one range lock. */
#include "range.h"
#include "fmt.h"
#include "maps.h"
#include "os.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static pthread_mutex_t rlock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;

static struct {
	size_t frontier;            /* pages [0, frontier) are usable, allocated or foreign */
	size_t reserved_end;        /* pages [0, reserved_end) lie in our PROT_NONE reservation */
	int mode;                   /* the mode in force */
	bool yields;                /* the reservation is RLIMIT_AS's share: auto, or reserve cut by
	                               the limit (range_yield_reservation) */
	size_t reserved_bytes;      /* reserved PROT_NONE at start */
	size_t ncoll;               /* collisions found */
	contig_collision_t coll[CONTIG_STATS_COLLISIONS];
	size_t notified;            /* collisions passed to the callback */
	char *meta_cur, *meta_end;  /* metadata bump area */
	size_t none_islands;        /* runs of PF_NONE pages side by side: kernel mappings of their own */
	size_t none_pages;          /* pages marked PF_NONE (none_mark alone sets and clears the flag):
	                               while 0, range_open has nothing to look for */
	int resv_nr;                /* our reservation shows VM_NORESERVE (not under overcommit mode 2):
	                               1 or 0; -1 not looked at yet (resv_noreserve) */
	uint64_t as_limit;          /* RLIMIT_AS at start, bytes; 0 none */
} R;

static contig_collision_fn coll_fn;
static void *coll_arg;

void range_lock(void) { pthread_mutex_lock(&rlock); }
void range_unlock(void) { pthread_mutex_unlock(&rlock); }
/* The child's lock starts unlocked and adaptive, as the parent's did (pthread_mutex_init with no
 * attributes would make it a plain mutex that sleeps at once). */
void range_fork_child(void) { rlock = (pthread_mutex_t)PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP; }
void range_wait(pthread_cond_t *c, const struct timespec *until) { pthread_cond_timedwait(c, &rlock, until); }

size_t range_frontier(void) { return R.frontier; }
uint64_t range_as_limit(void) { return R.as_limit; }
size_t range_mapped_pages(void) { return R.frontier > R.reserved_end ? R.frontier : R.reserved_end; }
size_t range_reserved_end(void) { return R.reserved_end; }
const size_t *range_frontier_addr(void) { return &R.frontier; }

static inline page_t *P(size_t idx) { return &G.pages[idx]; }

#define META_SPANS 4096
#define RLIMIT_RANGE_MIN ((uint64_t)4 << 30)   /* under RLIMIT_AS, the range is cut to no less than this */
#define RANGE_NONE_ISLANDS 256                 /* PROT_NONE islands of unmapped served pages, at most */
static range_span_t meta_span[META_SPANS];
static size_t nmeta_span;

/* A new metadata chunk: grow the span it touches, or start one. */
static void meta_note(uintptr_t lo, size_t len)
{
	for (size_t i = 0; i < nmeta_span; i++) {
		if (meta_span[i].hi == lo) { meta_span[i].hi = lo + len; return; }
		if (meta_span[i].lo == lo + len) { meta_span[i].lo = lo; return; }
	}
	if (nmeta_span < META_SPANS) {
		meta_span[nmeta_span].lo = lo;
		meta_span[nmeta_span].hi = lo + len;
		nmeta_span++;
	}
}

void range_meta_add(const void *p, size_t len)
{
	range_lock();
	meta_note((uintptr_t)p, len);
	range_unlock();
}

size_t range_meta_spans(const range_span_t **spans)
{
	*spans = meta_span;
	return nmeta_span;
}

/* ---- metadata: never freed, outside the range ---- */
void *meta_alloc_locked(size_t bytes)
{
	bytes = align_up(bytes, 64);
	if ((size_t)(R.meta_end - R.meta_cur) < bytes) {
		size_t chunk = align_up(bytes > ((size_t)1 << 20) ? bytes : ((size_t)1 << 20), OS_PAGE);
		char *m = os_map_meta(chunk, G.cfg.base, G.cfg.base + (G.npages << PAGE_SHIFT));
		if (!m) return NULL;
		meta_note((uintptr_t)m, chunk);
		R.meta_cur = m;
		R.meta_end = m + chunk;
	}
	void *p = R.meta_cur;
	R.meta_cur += bytes;
	return p;
}

void *meta_alloc(size_t bytes)
{
	range_lock();
	void *p = meta_alloc_locked(bytes);
	range_unlock();
	return p;
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

void range_count_collision(uintptr_t addr, size_t len, contig_route_t route)
{
	range_lock();
	collision_locked(addr, addr + len, route, NULL);
	range_unlock();
	range_notify_collisions();
}

void range_notify_collisions(void)
{
	/* Called without the lock, so the callback may allocate. */
	contig_collision_fn fn = coll_fn;
	if (!fn) return;
	for (;;) {
		contig_collision_t c;
		range_lock();
		if (R.notified >= R.ncoll || R.notified >= CONTIG_STATS_COLLISIONS) {
			R.notified = R.ncoll;
			range_unlock();
			return;
		}
		c = R.coll[R.notified++];
		range_unlock();
		fn(&c, coll_arg);
	}
}

void range_set_collision_callback(contig_collision_fn fn, void *arg)
{
	range_lock();
	coll_arg = arg;
	coll_fn = fn;
	range_unlock();
	range_notify_collisions();
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
	uintptr_t lo, hi;           /* where to look */
	uintptr_t clo, chi;         /* what of a mapping found there to mark and record */
	uintptr_t shared;           /* the last page this scan marked (+1; 0: none): another line
	                               there is another mapping, not one found before */
} foreign_scan_t;

/* Whether our reservation has VM_NORESERVE, read from smaps the first time it matters (a
 * PROT_NONE line over part of the pages about to be used), not at start: smaps is long and
 * slow to make, and reading it there was two thirds of the library's start-up cost (/bin/true:
 * 815,000 instructions, 510,000 of them in smaps). The page looked at is the last reserved one
 * never used, still the reservation's own mapping; with none left, nothing reserved is about
 * to be used either. */
static int resv_noreserve(void)
{
	if (R.resv_nr >= 0) return R.resv_nr;
	size_t i = R.reserved_end;
	while (i > 0 && P(i - 1)->kind != PK_UNUSED) i--;
	if (i == 0) return 0;
	R.resv_nr = maps_noreserve(page_addr(i - 1)) == 1;
	return R.resv_nr;
}

static int foreign_cb(const maps_entry_t *m, void *arg)
{
	foreign_scan_t *fs = arg;
	if (fs->own_reserved && m->anon && m->perms[0] == '-' && m->perms[1] == '-' && m->perms[2] == '-') {
		/* Our reservation, as a rule: one PROT_NONE mapping over the pages about to be used.
		 * One that covers only part of them sits beside another mapping there: a PROT_NONE
		 * mapping put over our reservation by a raw system call (without MAP_NORESERVE, which
		 * ours has) must not be taken for it, or its pages would be handed out. */
		if ((m->lo <= fs->lo && m->hi >= fs->hi) || !resv_noreserve() || maps_noreserve(m->lo) != 0)
			return 0;
	}
	uintptr_t lo = m->lo < fs->clo ? fs->clo : m->lo;
	uintptr_t hi = m->hi > fs->chi ? fs->chi : m->hi;
	bool known = true;
	for (uintptr_t a = align_down(lo, PAGE_SIZE); a < hi && known; a += PAGE_SIZE) {
		uint8_t k = G.pages[(a - G.base) >> PAGE_SHIFT].kind;
		known = (k == PK_FOREIGN || k == PK_MMAP_FIXED) && a + 1 != fs->shared;
	}
	if (known) return 0;                   /* found before: recorded once */
	mark_foreign(lo, hi);
	fs->shared = align_down(hi - 1, PAGE_SIZE) + 1;
	collision_locked(lo, hi, fs->route, m->line);
	fs->found++;
	return 0;
}

/* Scan [lo, hi) for foreign mappings, mark and record them. Returns how many were found. */
static int scan_foreign(uintptr_t lo, uintptr_t hi, contig_route_t route, int own_reserved)
{
	/* a mapping found there is marked and recorded up to its end (as far as it lies in the
	 * range): one collision, not one for each stretch of the range a scan looks at; never below
	 * lo, where the pages may be the heap's */
	foreign_scan_t fs = { route, own_reserved, 0, lo, hi, lo, G.base + (G.npages << PAGE_SHIFT), 0 };
	maps_scan(lo, hi, foreign_cb, &fs);
	return fs.found;
}
/* A pointer on a page the library never made usable (beyond the frontier): inside a foreign
 * mapping that raw system calls put there? Asked before free or realloc of it would fail as an
 * invalid pointer; looks in /proc/self/maps and records what it finds (a collision, as any). */
bool range_foreign_at(uintptr_t addr)
{
	size_t i = (addr - G.base) >> PAGE_SHIFT;
	range_lock();
	if (P(i)->kind == PK_UNUSED) {
		/* the whole mapping found there, as far as it lies in the range: one collision */
		foreign_scan_t fs = { CONTIG_ROUTE_MAPS, i < R.reserved_end, 0, page_addr(i), page_addr(i + 1),
		                      G.base, G.base + (G.npages << PAGE_SHIFT), 0 };
		maps_scan(fs.lo, fs.hi, foreign_cb, &fs);
	}
	bool foreign = P(i)->kind == PK_FOREIGN;
	range_unlock();
	range_notify_collisions();
	return foreign;
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

/* Make pages [a, b) usable; foreign pages inside are skipped and recorded. Hands what it made
 * usable to add and moves the frontier. Returns 0, or -errno when it could not go on. */
static int make_usable(size_t a, size_t b, range_usable_fn add)
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
			add(i, k - i);
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
		add(i, j - i);
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

/* Grow so that a run of n pages may fit (see range.h). */
int range_grow(size_t n, range_usable_fn add)
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
	make_usable(f, b, add);
	if (R.frontier == f && want > need) {
		/* refused (RLIMIT_AS near its end?): just what this request needs */
		b = f + need > G.npages ? G.npages : f + need;
		make_usable(f, b, add);
	}
	return R.frontier > f ? 0 : -1;
}
size_t range_release_floor_locked(void)
{
	for (size_t k = R.frontier; k < R.reserved_end; k++)
		if (P(k)->kind != PK_UNUSED) return R.reserved_end;   /* a foreign mapping in it: keep it whole */
	return 0;
}

void range_release_top_locked(size_t idx)
{
	size_t f = R.frontier, end = range_mapped_pages();
	if (idx >= f) return;
	range_none_forget(idx, f);
	memset(P(idx), 0, (f - idx) * sizeof(page_t));  /* PK_UNUSED: beyond the frontier */
	os_munmap((void *)page_addr(idx), (end - idx) << PAGE_SHIFT);
	R.frontier = idx;
	if (R.reserved_end > idx) {
		R.reserved_end = idx;
		R.reserved_bytes = idx << PAGE_SHIFT;
	}
}

/* RLIMIT_AS refused a mapping of len bytes the program asked the kernel for (a runtime
 * reserving its own heap, say), which it would have got without us. In auto mode (and in reserve
 * mode cut to auto's share by the limit), give back the top of the reservation the heap has not
 * reached (len and half as much again, at least 64 MiB), so that the address space is the
 * program's; the heap grows lazily past the new end. Whether anything was given back (then the
 * caller tries again). */
bool range_yield_reservation(size_t len)
{
	if (!R.yields) return false;
	size_t want = (align_up(len, PAGE_SIZE) >> PAGE_SHIFT) * 3 / 2 + 1;
	if (want < ((size_t)64 << 20) >> PAGE_SHIFT) want = ((size_t)64 << 20) >> PAGE_SHIFT;
	range_lock();
	size_t end = R.reserved_end, lo = end;
	while (lo > R.frontier && end - lo < want && P(lo - 1)->kind == PK_UNUSED) lo--;
	if (lo < end) {
		os_munmap((void *)page_addr(lo), (end - lo) << PAGE_SHIFT);
		R.reserved_end = lo;
		R.reserved_bytes = lo << PAGE_SHIFT;
	}
	range_unlock();
	if (lo < end && G.cfg.verbose) {
		char buf[200];
		fmtbuf_t b;
		fmt_init(&b, buf, sizeof buf);
		fmt_str(&b, R.mode == MODE_AUTO ? "auto: " : "CONTIG_MODE=reserve: ");
		fmt_str(&b, "RLIMIT_AS refused a mapping of ");
		fmt_size(&b, len);
		fmt_str(&b, " outside the heap; gave back ");
		fmt_size(&b, (end - lo) << PAGE_SHIFT);
		fmt_str(&b, " of the reservation (now ");
		fmt_size(&b, lo << PAGE_SHIFT);
		fmt_str(&b, "), growing lazily beyond");
		log_line(buf);
	}
	return lo < end;
}

/* ---- start ---- */
static size_t auto_headroom(uint64_t rl)
{
	/* Room left under RLIMIT_AS for what the heap does not own: thread stacks, libraries, file
	 * mappings, the kernel's own mmaps, runtimes reserving their own heaps (thread stacks and
	 * SBCL's 1 GiB go through libc's internal mmap, where range_yield_reservation cannot see
	 * them: 100 threads' stacks are 800 MiB). Seven eighths of the limit, at least 256 MiB:
	 * the heap grows lazily past its reservation anyway. */
	size_t h = (size_t)(rl - rl / 8);
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

/* Pages of the range a reservation may take under RLIMIT_AS rl: what the process maps now and
 * auto's headroom for its threads, libraries and runtimes stay outside it (auto, and reserve
 * when the limit refuses the whole range). */
static size_t auto_room(uint64_t rl)
{
	size_t vm = maps_vm_size(), head = auto_headroom(rl);
	size_t room = rl > vm + head ? (size_t)(rl - vm - head) : 0;
	room >>= PAGE_SHIFT;
	return room > G.npages ? G.npages : room;
}

int range_init(void)
{
	const config_t *c = &G.cfg;
	char buf[300];
	fmtbuf_t b;

	uint64_t rl;
	os_getrlimit_as(&rl);
	R.as_limit = rl == UINT64_MAX ? 0 : rl;
	G.npages = c->size >> PAGE_SHIFT;
	size_t cut = G.npages;
	if (rl != UINT64_MAX) {
		/* Under RLIMIT_AS the heap can never outgrow the limit, but the descriptors of a range
		 * far beyond it would take address space the program needs (64 MiB for the default
		 * 64G): the range is cut to eight times the limit, at least 4G. */
		uint64_t cap = rl > (UINT64_MAX >> 4) ? UINT64_MAX : rl * 8;
		if (cap < RLIMIT_RANGE_MIN) cap = RLIMIT_RANGE_MIN;
		if ((cap >> PAGE_SHIFT) < G.npages) cut = G.npages = (size_t)(cap >> PAGE_SHIFT);
	}
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
	if (G.npages != cut) {
		fmt_init(&b, buf, sizeof buf);
		fmt_str(&b, "CONTIG_SIZE: no room for the page descriptors of ");
		fmt_size(&b, (size_t)cut << PAGE_SHIFT);
		fmt_str(&b, " (RLIMIT_AS or overcommit); using ");
		fmt_size(&b, G.npages << PAGE_SHIFT);
		log_line(buf);
	}
	size_t want = 0;
	const char *why = "";
	R.mode = c->mode;
	R.yields = c->mode == MODE_AUTO;
	switch (c->mode) {
	case MODE_RESERVE: want = G.npages; why = "CONTIG_MODE=reserve"; break;
	case MODE_LAZY: want = 0; why = "CONTIG_MODE=lazy"; break;
	default:
		if (rl == UINT64_MAX) {
			want = G.npages;
			why = "auto: no RLIMIT_AS, reserving the whole range";
		} else {
			want = auto_room(rl);
			why = want == G.npages ? "auto: RLIMIT_AS leaves room for the whole range"
			                       : "auto: RLIMIT_AS is below the range; reserving part, growing lazily beyond";
		}
		break;
	}
	size_t got;
	if (want == G.npages && os_reserve_fixed(page_addr(0), want << PAGE_SHIFT) == 0) {
		/* The usual case: the whole range reserved with MAP_FIXED_NOREPLACE, so nothing was
		 * mapped in it, and there is nothing to read /proc/self/maps for (40-60 us, at the
		 * start of every process). */
		R.reserved_end = want;
		got = want;
	} else {
		/* Route 1: whatever is already mapped in the range. */
		scan_foreign(c->base, c->base + (G.npages << PAGE_SHIFT), CONTIG_ROUTE_START, 0);
		got = want ? reserve_gaps(want) : 0;
	}
	if (got < want && c->mode == MODE_RESERVE) {
		/* refused whole (RLIMIT_AS): reserve what auto would, the most the limit leaves
		 * room for, rather than nothing; then yield it as auto does (the program's own
		 * mappings come first) */
		if (got == 0 && rl != UINT64_MAX) {
			size_t room = auto_room(rl);
			if (room > 0) got = reserve_gaps(room);
			R.yields = got > 0;
		}
		fmt_init(&b, buf, sizeof buf);
		if (R.yields) {
			fmt_str(&b, "CONTIG_MODE=reserve: RLIMIT_AS refused the whole range; reserved ");
			fmt_size(&b, got << PAGE_SHIFT);
			fmt_str(&b, ", what the limit leaves room for; growing lazily beyond");
		} else {
			fmt_str(&b, "CONTIG_MODE=reserve: could reserve only ");
			fmt_size(&b, got << PAGE_SHIFT);
			fmt_str(&b, " of the range (RLIMIT_AS or a foreign mapping); growing lazily beyond");
		}
		log_line(buf);
	}
	R.reserved_bytes = got << PAGE_SHIFT;
	R.resv_nr = got ? -1 : 0;
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
		if (cut != c->size >> PAGE_SHIFT) {
			fmt_str(&b, "; range cut from ");
			fmt_size(&b, c->size);
			fmt_str(&b, " to eight times RLIMIT_AS");
		}
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
static bool is_none(size_t i) { return i < G.npages && (P(i)->flags & PF_NONE); }

/* Pages [a, b) become PF_NONE (set) or stop being so: the count of PF_NONE islands follows. */
static void none_mark(size_t a, size_t b, bool set)
{
	bool left = a > 0 && is_none(a - 1), right = is_none(b);
	for (size_t i = a; i < b; i++) {
		bool was = P(i)->flags & PF_NONE;
		if (set) P(i)->flags |= PF_NONE;
		else P(i)->flags &= (uint8_t)~PF_NONE;
		R.none_pages = R.none_pages + set - was;
	}
	if (set) R.none_islands = R.none_islands + 1 - left - right;
	else if (left && right) R.none_islands++;
	else if (!left && !right && R.none_islands) R.none_islands--;
}

/* Our own anonymous mapping back over pages [a, b), as the range had it, except that pages
 * below the frontier come back PROT_NONE: the caller unmapped them, so touching them must fault
 * as it would with the kernel. They are made RW again when the heap hands them out (PF_NONE).
 * Each such island is two kernel mappings more (itself, and the split of the RW mapping it
 * sits in); past RANGE_NONE_ISLANDS of them, unmapped pages come back RW and empty instead,
 * as SPEC's Scale rule prefers: a program that unmaps thousands of small mappings between
 * live blocks must not reach vm.max_map_count (65530) through the library. */
void range_restore(size_t a, size_t b)
{
	uintptr_t lo = page_addr(a);
	size_t len = (b - a) << PAGE_SHIFT;
	if (a >= R.frontier && a >= R.reserved_end) { os_munmap((void *)lo, len); return; }  /* lazy part */
	if (a < R.frontier && R.none_islands >= RANGE_NONE_ISLANDS && !is_none(a - 1) && !is_none(b)) {
		os_map_over_rw(lo, len);
		return;
	}
	os_map_over_none(lo, len);
	if (a < R.frontier) none_mark(a, b, true);
}

/* Pages [a, b), PF_NONE or not, are the caller's for a fixed mapping now (region_fixed_take). */
void range_none_forget(size_t a, size_t b)
{
	for (size_t i = a; i < b;) {
		if (!is_none(i)) { i++; continue; }
		size_t j = i;
		while (j < b && is_none(j)) j++;
		none_mark(i, j, false);
		i = j;
	}
}

/* Pages [a, b) are about to be handed out: make the PROT_NONE ones usable again. */
void range_open(size_t a, size_t b)
{
	if (!R.none_pages) return;      /* the common case: no served mapping was unmapped */
	for (size_t i = a; i < b;) {
		if (!is_none(i)) { i++; continue; }
		size_t j = i;
		while (j < b && is_none(j)) j++;
		none_mark(i, j, false);
		os_commit(page_addr(i), (j - i) << PAGE_SHIFT);
		i = j;
	}
}


void range_get_stats_locked(range_stats_t *rs)
{
	rs->reserved = R.reserved_bytes;
	rs->mapped = R.frontier << PAGE_SHIFT;
	rs->collisions = R.ncoll;
	memcpy(rs->coll, R.coll, sizeof rs->coll);
	rs->mode = R.mode;
}
