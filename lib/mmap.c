/* mmap.c - the mapping calls: private anonymous mmap served from the range, and every call that
 * could place, change or remove a mapping inside it checked against who owns those pages. */
#include "mmap.h"
#include "alloc.h"
#include "region.h"
#include "range.h"
#include "init.h"
#include "fmt.h"
#include "os.h"
#include "maps.h"
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MAP_HUGETLB
#define MAP_HUGETLB 0x40000
#endif
#ifndef MREMAP_FIXED
#define MREMAP_FIXED 2
#endif
#ifndef MREMAP_MAYMOVE
#define MREMAP_MAYMOVE 1
#endif
#define MADV_GUARD_INSTALL_ 102          /* Linux 6.13 */
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

static _Atomic(uint64_t) mmap_calls;

uint64_t mm_calls(void) { return atomic_load_explicit(&mmap_calls, memory_order_relaxed); }

static void *fail(int e)
{
	errno = e;
	return MAP_FAILED;
}

static void *kernel_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p = os_mmap(addr, len, prot, flags, fd, off);
	if (os_failed(p)) return fail(os_err(p));
	return p;
}

/* kernel_mmap for a mapping the program asks the kernel for: when RLIMIT_AS refuses it, the
 * reservation the heap has not used gives way (auto mode) and the kernel is asked again. */
static void *kernel_mmap_room(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p = os_mmap(addr, len, prot, flags, fd, off);
	if (os_failed(p) && os_err(p) == ENOMEM && range_yield_reservation(len))
		p = os_mmap(addr, len, prot, flags, fd, off);
	if (os_failed(p)) return fail(os_err(p));
	return p;
}

static int kernel_ret(int r)
{
	if (r < 0) { errno = -r; return -1; }
	return 0;
}

static bool overlaps_range(uintptr_t a, size_t len)
{
	uintptr_t lo = G.base, hi = G.base + G.size;
	return G.size && a < hi && a + len > lo;
}

static void refuse_line(const char *call, uintptr_t a, size_t len, const char *why)
{
	char buf[240];
	fmtbuf_t b;
	fmt_init(&b, buf, sizeof buf);
	fmt_str(&b, call);
	fmt_str(&b, "(");
	fmt_hex(&b, a);
	fmt_str(&b, ", ");
	fmt_dec(&b, len);
	fmt_str(&b, "): refused, ");
	fmt_str(&b, why);
	log_verbose(buf);
}

/* A kernel mapping that must not land in the range: a hint inside it is moved out. */
static void *outside_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (addr && overlaps_range((uintptr_t)addr, len)) addr = NULL;
	void *p = kernel_mmap_room(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && overlaps_range((uintptr_t)p, len)) {
		/* the kernel chose a place in the range (lazy mode leaves it unmapped): go above it */
		os_munmap(p, len);
		p = kernel_mmap((void *)(G.base + G.size), len, prot, flags, fd, off);
		if (p != MAP_FAILED && overlaps_range((uintptr_t)p, len)) {
			os_munmap(p, len);
			return fail(ENOMEM);
		}
	}
	return p;
}

static bool servable(size_t len, int prot, int flags)
{
	int mode = G.cfg.mmap;
	if (mode == MMAP_NONE || !G.size || len == 0) return false;
	if ((flags & MAP_TYPE) != MAP_PRIVATE || !(flags & MAP_ANONYMOUS)) return false;
	if (flags & (MAP_32BIT | MAP_HUGETLB | MAP_GROWSDOWN)) return false;
	if (prot == PROT_NONE && mode != MMAP_ALL) return false;
	/* other bits (PROT_GROWSDOWN, PROT_SEM, unknown ones): the kernel's to accept or refuse */
	if (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC)) return false;
	return true;
}

/* Classification of pages [a, b): the worst one, by what may be done over it. */
typedef struct span { int heap, free, mine, fixed, foreign; } span_t;

static void survey(size_t a, size_t b, span_t *s)
{
	memset(s, 0, sizeof *s);
	for (size_t i = a, next; i < b; i = next) {
		page_t *h;
		int c = region_classify_span(i, &h, &next);
		int n = (int)((next < b ? next : b) - i);
		switch (c) {
		case PC_HEAP: s->heap += n; break;
		case PC_FREE: case PC_UNUSED: s->free += n; break;
		case PC_MMAP: s->mine += n; break;
		case PC_FIXED: s->fixed += n; break;
		default: s->foreign += n; break;
		}
	}
}

static inline size_t pidx(uintptr_t a) { return (a - G.base) >> PAGE_SHIFT; }

/* Pages [a, b) of the range that [lo, lo+len) touches (clipped to the range). */
static void page_span(uintptr_t lo, size_t len, size_t *a, size_t *b)
{
	uintptr_t hi = lo + len;
	if (lo < G.base) lo = G.base;
	if (hi > G.base + G.size) hi = G.base + G.size;
	*a = pidx(lo);
	*b = pidx(align_up(hi, PAGE_SIZE));
}

/* The caller makes [a, a + len), which overlaps the range, accessible: pages of it that a served
 * reservation held as address space only count as committed from now on. 0, or ENOMEM (a limit
 * hit) when the limit has no room for them once what can be given back is. Only CONTIG_MMAP=all
 * serves reservations. */
static int commit_served(uintptr_t a, size_t len)
{
	if (G.cfg.mmap != MMAP_ALL) return 0;
	size_t pa, pb;
	page_span(a, len, &pa, &pb);
	bool tried = heap_limit_try();
	int r = region_mmap_commit(pa, pb);
	if (heap_limit_again(tried, r == 0)) r = region_mmap_commit(pa, pb);
	return r ? ENOMEM : 0;
}

/* Mark the 4 KiB pages of [lo, hi) in fixed pages as the caller's (set) or not. Returns the fixed
 * pages whose last 4 KiB page the caller gave up. */
static void fixed_mask(uintptr_t lo, uintptr_t hi, bool set)
{
	/* only the part inside the range (a fixed mapping may reach past either end) */
	if (lo < G.base) lo = G.base;
	if (hi > G.base + G.size) hi = G.base + G.size;
	size_t back = SIZE_MAX;         /* first of the pages unmapped whole so far, given back together */
	for (uintptr_t p = align_down(lo, PAGE_SIZE); p < hi; p += PAGE_SIZE) {
		page_t *pg = page_of((void *)p);
		bool whole = false;
		if (pg->kind == PK_MMAP_FIXED) {
			uintptr_t s = p > lo ? p : lo, e = p + PAGE_SIZE < hi ? p + PAGE_SIZE : hi;
			uint32_t m = 0;
			for (uintptr_t q = s; q < e; q += OS_PAGE) m |= 1u << ((q - p) / OS_PAGE);
			if (set) pg->npages |= m;
			else whole = (pg->npages &= ~m) == 0;
		}
		if (whole && back == SIZE_MAX) back = pidx(p);
		if (!whole && back != SIZE_MAX) {
			region_fixed_give_back(back, pidx(p));
			back = SIZE_MAX;
		}
	}
	if (back != SIZE_MAX) region_fixed_give_back(back, pidx(align_up(hi, PAGE_SIZE)));
}

/* A fixed mapping of the caller's now covers [lo, hi), which reaches into served run h: the rest
 * of the run's last 64 KiB page past what mmap gave, or pages the caller unmapped. All of it is
 * the caller's now: the run's extent grows to take it in, what lies between the old extent and
 * it becomes holes (and reads as unmapped), and holes it covers are holes no more. Otherwise
 * unmapping the rest of the run would give the whole run back, PROT_NONE over the caller's new
 * mapping, and unmapping the new mapping would be clipped to nothing. */
static void served_extend(page_t *h, uintptr_t lo, uintptr_t hi)
{
	uintptr_t start = page_addr(page_idx(h)), end = start + ((size_t)h->npages << PAGE_SHIFT);
	if (lo < start) lo = start;
	if (hi > end) hi = end;
	size_t olo = h->map_lo, ohi = h->map_hi, flo = lo - start, fhi = hi - start;
	size_t nlo = flo < olo ? flo : olo, nhi = fhi > ohi ? fhi : ohi;
	bool gap = flo > ohi || fhi < olo;
	if (!gap && !h->holes) {
		/* touching or inside the extent, and no holes to clear: just wider */
		h->map_lo = nlo;
		h->map_hi = nhi;
		return;
	}
	size_t bits = ((size_t)h->npages << PAGE_SHIFT) / OS_PAGE;
	if (!h->holes) h->holes = meta_alloc((bits + 63) / 64 * 8);     /* zeroed, outside the range */
	if (!h->holes) return;                  /* no memory for the bitmap: as before */
	range_lock();
	for (size_t i = nlo / OS_PAGE; i < nhi / OS_PAGE; i++) {
		size_t o = i * OS_PAGE;
		if (o >= flo && o < fhi) h->holes[i >> 6] &= ~(1ull << (i & 63));
		else if (o < olo || o >= ohi) h->holes[i >> 6] |= 1ull << (i & 63);
	}
	h->map_lo = nlo;
	h->map_hi = nhi;
	range_unlock();
	/* the gap between reads as unmapped, as it does to the kernel */
	uintptr_t glo = gap ? start + (flo > ohi ? ohi : fhi) : 0, ghi = gap ? start + (flo > ohi ? flo : olo) : 0;
	if (glo < ghi) {
		os_map_over_none(glo, ghi - glo);
		for (size_t i = pidx(glo); i < pidx(align_up(ghi, PAGE_SIZE)); i++) h[i - page_idx(h)].flags |= PF_PROT;
	}
}

static bool holes_any(const page_t *h, uintptr_t lo, uintptr_t hi);
static bool holes_all(const uint64_t *bm, size_t a, size_t b);

/* Whether the caller still has any 4 KiB page of [lo, hi) mapped in the served runs of pages
 * [pa, pb): what it unmapped (holes, the parts cut off a run) and the rest of a run's last 64 KiB
 * page past what mmap gave are not its mappings, and MAP_FIXED_NOREPLACE may take them. */
static bool served_mapped_any(size_t pa, size_t pb, uintptr_t lo, uintptr_t hi)
{
	for (size_t i = pa; i < pb;) {
		page_t *h;
		size_t next;
		if (region_classify_span(i, &h, &next) != PC_MMAP) { i = next; continue; }
		uintptr_t start = page_addr(page_idx(h));
		uintptr_t s = start + h->map_lo > lo ? start + h->map_lo : lo;
		uintptr_t e = start + h->map_hi < hi ? start + h->map_hi : hi;
		s = align_down(s, OS_PAGE);
		e = align_up(e, OS_PAGE);
		if (s < e && !(h->holes && holes_all(h->holes, (s - start) / OS_PAGE, (e - start) / OS_PAGE)))
			return true;
		i = page_idx(h) + h->npages;
	}
	return false;
}

/* What places a fixed mapping once the pages are cleared for it: the kernel's mmap or shmat. */
typedef struct place {
	void *(*fn)(const struct place *pl);
	void *addr;
	size_t len;
	int prot, flags, fd, shmid;
	off_t off;
} place_t;
static void *place_mmap(const place_t *pl);

/* A mapping the caller places at [a, a + len), which overlaps the range: refused over live
 * heap blocks (errno busy for a no-replace request, else refused), and, when noreplace, over
 * anything the caller or others have mapped there (busy); free pages become the caller's (and
 * it is recorded); its own served mappings take it in. */
static void *fixed_place(const char *call, const char *what, uintptr_t a, size_t len, bool noreplace, int busy,
                         int refused, const place_t *pl)
{
	size_t pa, pb;
	span_t s;
	page_span(a, len, &pa, &pb);
	survey(pa, pb, &s);
	if (s.heap) {
		refuse_line(call, a, len, "it would replace live heap blocks");
		range_count_collision(a, len, CONTIG_ROUTE_MMAP);
		return fail(noreplace ? busy : refused);
	}
	if (noreplace && (s.fixed || s.foreign || (s.mine && served_mapped_any(pa, pb, a, a + len))))
		return fail(busy);
	/* over the caller's own served pages, a mapping of anything but PROT_NONE commits those of
	 * a reservation (as mprotect does); PROT_NONE over whole pages gives them back (below) */
	bool anon_none = pl->fn == place_mmap && pl->prot == PROT_NONE;
	if (s.mine && !anon_none && commit_served(a, len) != 0) return fail(ENOMEM);
	if (s.free && region_fixed_take(pa, pb) != 0) return fail(noreplace ? busy : refused);
	void *p = pl->fn(pl);
	if (p == MAP_FAILED) {
		int e = errno;
		fixed_mask(a, a + len, false);
		errno = e;
		return p;
	}
	fixed_mask(a, a + len, true);
	for (size_t i = pa; s.mine && i < pb;) {
		page_t *h;
		size_t next;
		if (region_classify_span(i, &h, &next) != PC_MMAP) { i = next; continue; }
		served_extend(h, a, a + len);
		/* the caller's own mapping there now, whatever its protection, sharing or file: what
		 * grows it in place, or frees it, must go through the kernel (prot_changed) */
		for (size_t k = i; k < pb && k < page_idx(h) + h->npages; k++) G.pages[k].flags |= PF_PROT;
		i = page_idx(h) + h->npages;
	}
	if (s.mine && anon_none && G.cfg.mmap == MMAP_ALL) {
		/* a runtime uncommitting part of its reservation: the kernel dropped what the pages
		 * held, and each whole 64 KiB page of it is address space only again */
		uintptr_t lo = align_up(a > G.base ? a : G.base, PAGE_SIZE);
		uintptr_t hi = align_down(a + len < G.base + G.size ? a + len : G.base + G.size, PAGE_SIZE);
		if (lo < hi) region_mmap_uncommit(pidx(lo), pidx(hi));
	}
	if (s.free) {
		/* honoured, and recorded: the pages are the caller's until unmapped */
		char buf[160];
		fmtbuf_t b;
		fmt_init(&b, buf, sizeof buf);
		fmt_str(&b, what);
		fmt_str(&b, " at ");
		fmt_hex(&b, a);
		fmt_str(&b, " over free range pages: honoured, the pages are the caller's until unmapped");
		log_verbose(buf);
		range_count_collision(a, len, CONTIG_ROUTE_MMAP);
	}
	return p;
}

static void *place_mmap(const place_t *pl)
{
	int kflags = (pl->flags & ~MAP_FIXED_NOREPLACE) | MAP_FIXED;
	return kernel_mmap(pl->addr, pl->len, pl->prot, kflags, pl->fd, pl->off);
}

static void *fixed_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	bool noreplace = (flags & MAP_FIXED_NOREPLACE) && !(flags & MAP_FIXED);
	place_t pl = { place_mmap, addr, len, prot, flags, fd, 0, off };
	return fixed_place("mmap", "mmap(MAP_FIXED)", (uintptr_t)addr, len, noreplace, EEXIST, ENOMEM, &pl);
}

/* ---- SysV shared memory: shmat at an address in the range places a mapping like mmap with
 * MAP_FIXED (SHM_REMAP) or MAP_FIXED_NOREPLACE (without it, the kernel refuses an address where
 * anything is mapped; the library's free pages count as nothing); shmdt gives the pages back.
 * Without an address, or outside the range, the kernel's. ---- */
#ifndef SHM_REMAP
#define SHM_REMAP 040000
#endif
static void *place_shm(const place_t *pl)
{
	long r = os_syscall6(SYS_shmat, pl->shmid, (long)pl->addr, pl->flags | SHM_REMAP, 0, 0, 0);
	if (r < 0 && r > -4096) return fail((int)-r);
	return (void *)r;
}

void *mm_shmat(int id, const void *addr, int flg)
{
	contig_ensure_init();
	uintptr_t a = (uintptr_t)addr;
	if (a && (flg & SHM_RND)) a = align_down(a, SHMLBA);
	struct shmid_ds ds;
	if (a && !(a & (OS_PAGE - 1)) && os_syscall6(SYS_shmctl, id, IPC_STAT, (long)&ds, 0, 0, 0) == 0 &&
	    ds.shm_segsz && overlaps_range(a, align_up(ds.shm_segsz, OS_PAGE))) {
		place_t pl = { place_shm, (void *)a, align_up(ds.shm_segsz, OS_PAGE), 0, flg & ~SHM_RND, -1, id, 0 };
		void *p = fixed_place("shmat", "shmat", a, pl.len, !(flg & SHM_REMAP), EINVAL, EINVAL, &pl);
		return p == MAP_FAILED ? (void *)-1 : p;
	}
	long r = os_syscall6(SYS_shmat, id, (long)addr, flg, 0, 0, 0);
	if (r < 0 && r > -4096) { errno = (int)-r; return (void *)-1; }
	return (void *)r;
}

typedef struct shm_find { uintptr_t lo, hi; } shm_find_t;

static int shm_line_cb(const maps_entry_t *m, void *arg)
{
	shm_find_t *f = arg;
	if (m->lo != f->lo) return 0;
	f->hi = m->hi;
	return 1;
}

int mm_shmdt(const void *addr)
{
	contig_ensure_init();
	uintptr_t a = (uintptr_t)addr;
	shm_find_t f = { a, 0 };
	/* its extent, before it goes: the mapping that starts there */
	bool ours = overlaps_range(a, 1) && region_classify(pidx(a), &(page_t *){ NULL }) == PC_FIXED &&
	            maps_scan(a, a + 1, shm_line_cb, &f) == 1;
	long r = os_syscall6(SYS_shmdt, (long)addr, 0, 0, 0, 0, 0);
	if (r < 0) { errno = (int)-r; return -1; }
	if (ours) fixed_mask(a, f.hi, false);
	return 0;
}

void *mm_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	contig_ensure_init();
	if (len == 0 || (off & (OS_PAGE - 1))) return fail(EINVAL);   /* the kernel's checks, anonymous or not */
	if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) {
		if (((uintptr_t)addr & (OS_PAGE - 1))) return fail(EINVAL);
		if (overlaps_range((uintptr_t)addr, len)) return fixed_mmap(addr, len, prot, flags, fd, off);
		return kernel_mmap_room(addr, len, prot, flags, fd, off);
	}
	if (!servable(len, prot, flags)) return outside_mmap(addr, len, prot, flags, fd, off);
	if (addr && !overlaps_range(align_down((uintptr_t)addr, OS_PAGE), len)) {
		/* A hint outside the range asks for a place: a JIT's code within a branch's reach of
		 * its binary (LuaJIT probes hint after hint and turns its compiler off when none is
		 * honoured). That place when it is free, from the kernel; else the range serves it. */
		void *want = (void *)align_down((uintptr_t)addr, OS_PAGE);
		int e = errno;
		void *p = kernel_mmap_room(want, len, prot, flags | MAP_FIXED_NOREPLACE, fd, off);
		if (p != MAP_FAILED) {
			if (p == want) return p;
			os_munmap(p, len);                 /* a kernel that took the flag for a hint */
		}
		errno = e;
	}
	/* a writable mapping the kernel would account for, larger than RAM and swap together: it
	 * refuses that under heuristic overcommit, and the range's reserved pages would not */
	if ((prot & PROT_WRITE) && !(flags & MAP_NORESERVE) && maps_beyond_memory(len))
		return fail(ENOMEM);
	size_t np = align_up(len, PAGE_SIZE) >> PAGE_SHIFT;
	page_t *h = NULL;
	if (len <= G.size) {
		/* a PROT_NONE reservation (CONTIG_MMAP=all) is address space: committed, within the
		 * limit, only as the caller makes its pages accessible (commit_served) */
		int rf = RUN_ZERO | (prot == PROT_NONE ? RUN_RESERVE : 0);
		bool tried = heap_limit_try();
		h = region_alloc(np, PK_MMAP, rf);
		if (heap_limit_again(tried, h != NULL)) h = region_alloc(np, PK_MMAP, rf);
	}
	if (!h) {
		if (G.cfg.fallback_system && !limit_refused) {
			void *p = outside_mmap(NULL, len, prot, flags, fd, off);
			if (p != MAP_FAILED) region_count_fallback(align_up(len, OS_PAGE));
			return p;
		}
		return fail(ENOMEM);
	}
	uintptr_t a = page_addr(page_idx(h));
	h->map_hi = align_up(len, OS_PAGE);
	if (prot != (PROT_READ | PROT_WRITE)) {
		for (size_t i = 0; i < np; i++) h[i].flags |= PF_PROT;
		int r = os_mprotect((void *)a, h->map_hi, prot);
		if (r != 0) {                      /* (the run goes back as a fresh mapping: PF_PROT) */
			region_free(h);
			return fail(-r);
		}
	}
	if (flags & MAP_POPULATE) os_madvise((void *)a, h->map_hi, 23 /* MADV_POPULATE_WRITE */);
	if (flags & MAP_LOCKED) {
		/* past RLIMIT_MEMLOCK the kernel refuses the mapping (EAGAIN); pages it could not
		 * fault in are no error */
		long r = os_syscall6(SYS_mlock, (long)a, (long)h->map_hi, 0, 0, 0, 0);
		if (r == -ENOMEM || r == -EPERM) {
			region_free(h);
			return fail(EAGAIN);
		}
	}
	atomic_fetch_add_explicit(&mmap_calls, 1, memory_order_relaxed);
	return (void *)a;
}

/* Bits [a, b) of a hole bitmap (4 KiB pages from the run's start). */
static bool holes_all(const uint64_t *bm, size_t a, size_t b)
{
	for (size_t i = a; i < b; i++)
		if (!(bm[i >> 6] & (1ull << (i & 63)))) return false;
	return true;
}

static bool holes_any(const page_t *h, uintptr_t lo, uintptr_t hi)
{
	if (!h->holes) return false;
	uintptr_t start = page_addr(page_idx(h));
	for (size_t i = (lo - start) / OS_PAGE; i < (hi - start) / OS_PAGE; i++)
		if (h->holes[i >> 6] & (1ull << (i & 63))) return true;
	return false;
}

/* Unmap [lo, hi) of served mapping h (clipped to what the caller still has mapped). A prefix or
 * a suffix gives its whole pages back at once; a hole in the middle is remembered per 4 KiB page,
 * and the run goes back whole once every page of it has been unmapped. */
static void unmap_served(page_t *h, uintptr_t lo, uintptr_t hi)
{
	size_t idx = page_idx(h);
	uintptr_t start = page_addr(idx);
	uintptr_t mlo = start + h->map_lo, mhi = start + h->map_hi;
	if (lo < mlo) lo = mlo;
	if (hi > mhi) hi = mhi;
	if (lo >= hi) return;
	if (lo == mlo && hi == mhi) {
		region_mmap_release(h, idx, idx + h->npages);
		return;
	}
	/* What the caller gave up reads as unmapped: no access, no memory. The whole pages a prefix
	 * or a suffix gives back get that from their release, which maps them again: only the part
	 * of a page the mapping keeps is mapped here (one system call, not two, for a trim). */
	for (size_t i = pidx(lo); i < pidx(align_up(hi, PAGE_SIZE)); i++) h[i - idx].flags |= PF_PROT;
	if (!h->holes && lo == mlo) {
		/* a prefix: whole pages before the new start go back */
		h->map_lo = hi - start;
		size_t keep_from = pidx(align_down(hi, PAGE_SIZE));
		uintptr_t kept = page_addr(keep_from) > lo ? page_addr(keep_from) : lo;
		if (kept < hi) os_map_over_none(kept, hi - kept);
		if (keep_from > idx) region_mmap_release(h, idx, keep_from);
		return;
	}
	if (!h->holes && hi == mhi) {
		h->map_hi = lo - start;
		size_t drop_from = pidx(align_up(lo, PAGE_SIZE));
		uintptr_t kept = page_addr(drop_from) < hi ? page_addr(drop_from) : hi;
		if (lo < kept) os_map_over_none(lo, kept - lo);
		if (drop_from < idx + h->npages) region_mmap_release(h, drop_from, idx + h->npages);
		return;
	}
	os_map_over_none(lo, hi - lo);
	size_t bits = ((size_t)h->npages << PAGE_SHIFT) / OS_PAGE;
	if (!h->holes) h->holes = meta_alloc((bits + 63) / 64 * 8);     /* zeroed, outside the range */
	if (!h->holes) return;                  /* no memory for the bitmap: kept until exit */
	range_lock();
	for (size_t i = (lo - start) / OS_PAGE; i < (hi - start) / OS_PAGE; i++)
		h->holes[i >> 6] |= 1ull << (i & 63);
	bool gone = holes_all(h->holes, h->map_lo / OS_PAGE, h->map_hi / OS_PAGE);
	range_unlock();
	if (gone) region_mmap_release(h, idx, idx + h->npages);
}

int mm_munmap(void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	contig_ensure_init();
	/* the kernel's checks: aligned, not empty, not wrapping past the top of the address space */
	if ((a & (OS_PAGE - 1)) || len == 0 || len > UINTPTR_MAX - a - (OS_PAGE - 1)) { errno = EINVAL; return -1; }
	if (!overlaps_range(a, len)) return kernel_ret(os_munmap(addr, len));
	len = align_up(len, OS_PAGE);
	size_t pa, pb;
	span_t s;
	page_span(a, len, &pa, &pb);
	survey(pa, pb, &s);
	if (s.heap) {
		refuse_line("munmap", a, len, "the pages hold live heap blocks");
		range_count_collision(a, len, CONTIG_ROUTE_MMAP);
		errno = EINVAL;
		return -1;
	}
	if (s.free) {
		/* pages the caller does not own (never mapped by it, or unmapped already): nothing to
		 * unmap there, as the kernel says of unmapped memory, but a collision (SPEC) */
		refuse_line("munmap", a, len, "some pages are not mapped by the caller");
		range_count_collision(a, len, CONTIG_ROUTE_MMAP);
	}
	/* parts outside the range, and foreign mappings inside it, are the kernel's business */
	if (a < G.base) os_munmap(addr, G.base - a);
	if (a + len > G.base + G.size) os_munmap((void *)(G.base + G.size), a + len - G.base - G.size);
	for (size_t i = pa, next; i < pb;) {
		page_t *h;
		int c = region_classify_span(i, &h, &next);
		if (c == PC_FREE || c == PC_UNUSED) { i = next; continue; }   /* nothing of the caller's */
		uintptr_t plo = page_addr(i), phi = plo + PAGE_SIZE;
		uintptr_t lo = a > plo ? a : plo;
		if (c == PC_MMAP) {
			uintptr_t rend = page_addr(page_idx(h) + h->npages);
			uintptr_t hi = a + len < rend ? a + len : rend;
			unmap_served(h, lo, hi);
			i = pidx(rend);
			continue;
		}
		uintptr_t hi = a + len < phi ? a + len : phi;
		if (c == PC_FIXED) {
			/* the caller's fixed pages that follow, unmapped and given back in one go */
			size_t j = i + 1;
			while (j < pb && G.pages[j].kind == PK_MMAP_FIXED) j++;
			hi = a + len < page_addr(j) ? a + len : page_addr(j);
			os_munmap((void *)lo, hi - lo);
			fixed_mask(lo, hi, false);
			i = j;
			continue;
		} else if (c == PC_FOREIGN)
			os_munmap((void *)lo, hi - lo);
		i++;
	}
	return 0;
}

/* [a, a+len) lies inside one live heap block: the caller may change it as its own memory. */
static bool inside_one_block(uintptr_t a, size_t len)
{
	page_t *h = page_run_head(page_of((void *)a));
	uintptr_t start = page_addr(page_idx(h));
	if (h->kind == PK_LARGE)
		return a >= start && a + len <= start + h->usable && h->asked != ASKED_CACHED;
	if (h->kind == PK_SMALL) {
		uintptr_t off = a - start, b0 = off / h->block_size * h->block_size;
		return off + len <= b0 + h->block_size && alloc_usable_size((void *)(start + b0)) != 0;
	}
	return false;
}

/* Whether the caller has every 4 KiB page of [a, a+len) that lies in its served mappings and fixed
 * pages mapped: inside a served mapping's extent and not in one of its holes, or among a fixed
 * page's own pages. Pages it unmapped stay reserved here, where the kernel would fail mprotect
 * and madvise over them with ENOMEM (and mprotect would make them usable again). */
static bool caller_maps_all(uintptr_t a, size_t len)
{
	uintptr_t lo = a > G.base ? a : G.base, hi = a + len < G.base + G.size ? a + len : G.base + G.size;
	lo = align_down(lo, OS_PAGE);
	hi = align_up(hi, OS_PAGE);
	while (lo < hi) {
		page_t *pg = page_of((void *)lo);
		uintptr_t pstart = align_down(lo, PAGE_SIZE), pend = pstart + PAGE_SIZE < hi ? pstart + PAGE_SIZE : hi;
		if (pg->kind == PK_MMAP_FIXED) {
			for (uintptr_t q = lo; q < pend; q += OS_PAGE)
				if (!(pg->npages & (1u << ((q - pstart) / OS_PAGE)))) return false;
		} else {
			page_t *h = page_run_head(pg);
			if (h->kind == PK_MMAP) {
				uintptr_t start = page_addr(page_idx(h));
				uintptr_t rend = start + ((uintptr_t)h->npages << PAGE_SHIFT);
				if (rend > hi) rend = hi;
				if (lo < start + h->map_lo || rend > start + h->map_hi || holes_any(h, lo, rend)) return false;
				pend = rend;
			}
		}
		lo = pend;
	}
	return true;
}

static int check_own(const char *call, uintptr_t a, size_t len, bool mark_prot, bool collide)
{
	size_t pa, pb;
	span_t s;
	page_span(a, len, &pa, &pb);
	survey(pa, pb, &s);
	if (s.heap && !(s.heap == (int)(pb - pa) && inside_one_block(a, len))) {
		refuse_line(call, a, len, "the pages hold heap blocks the caller does not own");
		range_count_collision(a, len, CONTIG_ROUTE_MMAP);
		return EACCES;
	}
	if (s.free || ((s.mine || s.fixed) && !caller_maps_all(a, len))) {
		refuse_line(call, a, len, "the pages are not mapped by the caller");
		/* SPEC: mprotect of range pages the caller does not own is a collision (madvise
		 * neither places nor removes a mapping: only refused, as the kernel would) */
		if (collide) range_count_collision(a, len, CONTIG_ROUTE_MMAP);
		return ENOMEM;
	}
	if (mark_prot) {
		for (size_t i = pa; i < pb; i++) G.pages[i].flags |= PF_PROT;
		if (s.heap) {
			/* inside one block: its head says so too, the one page free looks at (runs.c) */
			page_run_head(&G.pages[pa])->flags |= PF_PROT;
		}
	}
	return 0;
}

/* What mprotect and pkey_mprotect check before the kernel's call: 0, or the errno to fail with. */
static int protect_check(const char *call, uintptr_t a, size_t len, int prot)
{
	contig_ensure_init();
	if (a & (OS_PAGE - 1)) return EINVAL;                      /* the kernel's first check */
	if (!len || !overlaps_range(a, len)) return 0;
	int e = check_own(call, a, len, true, true);
	if (!e && prot != PROT_NONE) e = commit_served(a, len);
	return e;
}

int mm_mprotect(void *addr, size_t len, int prot)
{
	int e = protect_check("mprotect", (uintptr_t)addr, len, prot);
	if (e) { errno = e; return -1; }
	return kernel_ret(os_mprotect(addr, len, prot));
}

int mm_pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
	int e = protect_check("pkey_mprotect", (uintptr_t)addr, len, prot);
	if (e) { errno = e; return -1; }
	return kernel_ret((int)os_syscall6(SYS_pkey_mprotect, (long)addr, (long)len, prot, pkey, 0, 0));
}

int mm_madvise(void *addr, size_t len, int advice)
{
	uintptr_t a = (uintptr_t)addr;
	contig_ensure_init();
	/* advice that stays on the pages after a free: marked like a protection change, so that the
	 * block's pages get a fresh mapping when it is freed */
	bool lasting = advice == MADV_DONTFORK || advice == MADV_WIPEONFORK || advice == MADV_DONTDUMP ||
	               advice == MADV_GUARD_INSTALL_;
	bool destructive = lasting || advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE;
	if (destructive && len && overlaps_range(a, len)) {
		int e = check_own("madvise", a, len, lasting, false);
		if (e) { errno = e == EACCES ? EINVAL : e; return -1; }
	}
	return kernel_ret(os_madvise(addr, len, advice));
}

/* The old place [o, o+len) of a mapping the kernel just moved away is unmapped: map it again
 * (never over anything: a mapping that got there in between is a collision, and those pages are
 * then never given back) and give it back as an munmap would. */
static void refill_moved(page_t *h, uintptr_t o, size_t len)
{
	if (os_reserve_fixed(o, len) == 0) {
		unmap_served(h, o, o + len);
		return;
	}
	refuse_line("mremap", o, len, "a mapping took the place it moved from: those pages stay unused");
	range_count_collision(o, len, CONTIG_ROUTE_MMAP);
}

/* Whether a caller changed the protection of any page of [o, o+len). */
static bool prot_changed(uintptr_t o, size_t len)
{
	for (size_t i = pidx(o); i < pidx(align_up(o + len, PAGE_SIZE)); i++)
		if (G.pages[i].flags & PF_PROT) return true;
	return false;
}

/* The kernel's mappings that [lo, hi) spans start at these addresses (after lo). */
#define MOVE_PARTS 64
typedef struct parts { uintptr_t lo, hi; size_t n; uintptr_t at[MOVE_PARTS]; } parts_t;

static int part_cb(const maps_entry_t *m, void *arg)
{
	parts_t *c = arg;
	if (m->lo <= c->lo || m->lo >= c->hi) return 0;
	if (c->n == MOVE_PARTS) return 1;
	c->at[c->n++] = m->lo;
	return 0;
}

/* The kernel moves one of its mappings at a time (EFAULT when the old range spans two), and a
 * served mapping may span several: ours merge with what the caller's calls made of them only
 * when the kernel can merge them. So move each part on its own, the last one grown, to the same
 * offset from to; on a failure the parts already moved go back. */
static void *move_by_parts(uintptr_t o, size_t oldlen, size_t newlen, int flags, uintptr_t to)
{
	parts_t c = { o, o + oldlen, 0, { 0 } };
	if (newlen < oldlen || maps_scan(o, o + oldlen, part_cb, &c) != 0 || c.n == 0)
		return (void *)(intptr_t)-EFAULT;
	for (size_t k = 0; k <= c.n; k++) {
		uintptr_t a = k ? c.at[k - 1] : o, b = k < c.n ? c.at[k] : o + oldlen;
		size_t grow = k == c.n ? newlen - oldlen : 0;
		void *r = os_mremap((void *)a, b - a, b - a + grow, flags | MREMAP_MAYMOVE | MREMAP_FIXED,
		                    (void *)(to + (a - o)));
		if (!os_failed(r)) continue;
		for (size_t j = 0; j < k; j++) {           /* undo: each moved part goes back */
			uintptr_t pa = j ? c.at[j - 1] : o, pb = c.at[j];
			os_mremap((void *)(to + (pa - o)), pb - pa, pb - pa, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)pa);
		}
		return r;
	}
	return (void *)to;
}

/* Move [o, o+oldlen) of served mapping h to newaddr (MREMAP_FIXED, outside the range) or to
 * fresh range pages, newlen long. The kernel moves the page tables: protection, advice and
 * contents go along, and nothing is touched or copied. With MREMAP_DONTUNMAP the old place stays
 * mapped (and the caller's); otherwise it is mapped again and given back. */
static void *move_served(page_t *h, uintptr_t o, size_t oldlen, size_t newlen, int flags, void *newaddr)
{
	page_t *n = NULL;
	size_t np = 0;
	uintptr_t to = (uintptr_t)newaddr;
	if (!(flags & MREMAP_FIXED)) {
		/* a reservation nothing of which was made accessible moves as one (and grows PROT_NONE):
		 * its new pages are not committed either */
		bool resv = true;
		for (size_t i = pidx(o); resv && i < pidx(align_up(o + oldlen, PAGE_SIZE)); i++)
			resv = G.pages[i].flags & PF_RESV;
		np = align_up(newlen, PAGE_SIZE) >> PAGE_SHIFT;
		n = region_alloc(np, PK_MMAP, RUN_ZERO | (resv ? RUN_RESERVE : 0));
		if (!n) return fail(ENOMEM);
		to = page_addr(page_idx(n));
	}
	void *r = os_mremap((void *)o, oldlen, newlen, flags | MREMAP_MAYMOVE | MREMAP_FIXED, (void *)to);
	if (os_failed(r) && os_err(r) == EFAULT)
		r = move_by_parts(o, oldlen, newlen, flags, to);
	if (os_failed(r)) {
		int e = os_err(r);
		/* (the kernel may have unmapped the destination first: the release maps ours again) */
		if (n) region_mmap_release(n, page_idx(n), page_idx(n) + np);
		return fail(e);
	}
	if (n) {
		n->map_hi = newlen;
		for (size_t i = 0; i < np; i++) n[i].flags |= PF_PROT;   /* whatever it was, it came along */
	}
	if (!(flags & MREMAP_DONTUNMAP)) refill_moved(h, o, oldlen);
	return r;
}

void *mm_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *newaddr)
{
	uintptr_t o = (uintptr_t)old;
	contig_ensure_init();
	if ((flags & MREMAP_FIXED) && overlaps_range((uintptr_t)newaddr, newlen)) {
		/* refused: nothing was mapped, so no collision is recorded */
		refuse_line("mremap", (uintptr_t)newaddr, newlen, "MREMAP_FIXED into the range is not supported");
		return fail(EINVAL);
	}
	if (!overlaps_range(o, oldlen ? oldlen : 1)) {
		void *p = os_mremap(old, oldlen, newlen, flags, newaddr);
		if (os_failed(p)) return fail(os_err(p));
		return p;
	}
	if ((o & (OS_PAGE - 1)) || newlen == 0) return fail(EINVAL);
	if ((flags & ~(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)) ||
	    ((flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) && !(flags & MREMAP_MAYMOVE)) ||
	    ((flags & MREMAP_FIXED) && ((uintptr_t)newaddr & (OS_PAGE - 1))))
		return fail(EINVAL);
	page_t *h;
	int kind = region_classify(pidx(o), &h);
	if (kind != PC_MMAP) {
		refuse_line("mremap", o, oldlen, "not a mapping the caller got from mmap");
		if (kind == PC_HEAP) range_count_collision(o, oldlen, CONTIG_ROUTE_MMAP);
		return fail(EFAULT);
	}
	if (oldlen == 0) return fail(EINVAL);   /* the kernel's: a copy of a private mapping (served ones are) */
	oldlen = align_up(oldlen, OS_PAGE);
	newlen = align_up(newlen, OS_PAGE);
	uintptr_t start = page_addr(page_idx(h));
	if (o < start + h->map_lo || o + oldlen > start + h->map_hi || holes_any(h, o, o + oldlen))
		return fail(EFAULT);
	if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP))
		return move_served(h, o, oldlen, newlen, flags, newaddr);
	if (newlen <= oldlen) {
		if (newlen < oldlen) mm_munmap((void *)(o + newlen), oldlen - newlen);
		return old;
	}
	if (o + oldlen == start + h->map_hi && !h->holes) {
		/* growing the end of the mapping: the slack in its last page, then the pages after it */
		size_t want = o + newlen - start;
		size_t np = align_up(want, PAGE_SIZE) >> PAGE_SHIFT;
		size_t had = h->npages;
		/* the grown part gets the protection of the old end: PROT_NONE when the last page is a
		 * reservation's that nothing made accessible, and then it is not committed either */
		int rf = G.pages[pidx(o + oldlen - 1)].flags & PF_RESV ? RUN_RESERVE : 0;
		if (np == had || region_resize(h, np, rf) == 0) {
			bool plain = !prot_changed(o, oldlen);
			if (!plain) {
				/* The kernel grows it, so the new part gets the old part's protection and
				 * advice: give it the room for a moment. */
				os_munmap((void *)(o + oldlen), newlen - oldlen);
				if (!os_failed(os_mremap(old, oldlen, newlen, 0, NULL))) {
					for (size_t i = pidx(o + oldlen); i < pidx(align_up(o + newlen, PAGE_SIZE)); i++)
						G.pages[i].flags |= PF_PROT;
					h->map_hi = want;
					return old;
				}
				/* it would not (the old part spans mappings): the room is ours again (never
				 * over a mapping that got there meanwhile), and the mapping moves instead */
				os_map_fixed_rw(o + oldlen, newlen - oldlen);
			} else {
				/* the grown part reads as zero and is writable, whatever it was (slack left
				 * PROT_NONE by an earlier unmap, dirty free pages) */
				os_mmap((void *)(o + oldlen), newlen - oldlen, PROT_READ | PROT_WRITE,
				        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
				h->map_hi = want;
				return old;
			}
		}
	}
	if (!(flags & MREMAP_MAYMOVE)) return fail(ENOMEM);
	void *n = move_served(h, o, oldlen, newlen, flags, newaddr);
	if (n != MAP_FAILED || errno == ENOMEM || prot_changed(o, oldlen)) return n;
	/* The kernel would not move it (the old part spans two of its mappings, which a plain
	 * read-write served mapping may), so copy; the old part is readable. */
	n = mm_mmap(NULL, newlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (n == MAP_FAILED) return n;
	atomic_fetch_sub_explicit(&mmap_calls, 1, memory_order_relaxed);   /* an mremap, not an mmap call */
	memcpy(n, old, oldlen);
	mm_munmap(old, oldlen);
	return n;
}
