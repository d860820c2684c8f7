/* leak.c - leak checking (CONTIG_LEAKS): the conservative reachability scan from the roots (at
 * exit and on contig_leak_check()) and which unreached blocks are direct or indirect leaks. The
 * allocation stacks are stack.c's, each block's record leak_records.c's, stopping the other
 * threads for the scan stop.c's, and the groups, suppressions and report leak_report.c's. */
#include "leak.h"
#include "leak_records.h"
#include "leak_report.h"
#include "stack.h"
#include "stop.h"
#include "heap.h"
#include "range.h"
#include "init.h"
#include "maps.h"
#include "fmt.h"
#include "os.h"
#include <sys/syscall.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- check-time state (one check at a time: check_lock) ---- */
#define MSTACK_CAP  ((size_t)1 << 22)   /* mark stack entries (32 MiB, touched as used) */
#define TIME_CAP_MS 30000               /* a scan that takes longer is abandoned */

static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t *mstack;
static size_t msp;
static int moverflow;
static uintptr_t scan_end;              /* G.base + frontier bytes: nothing live beyond */
static uint64_t t_start;
static int timed_out;

/* ---- the scan map: where a word points, from one entry and a multiply ---- */
/* Built once the other threads are stopped, one entry per 64 KiB page below scan_end: the run the
 * page belongs to and the mark number of its first block. Blocks are numbered densely (the carved
 * blocks of each tracked small run, one number per large block), so the reach and indirect marks
 * are two bitmaps of one bit per block: 32 KiB each for a 1 GiB heap of 4 KiB blocks, where marks
 * kept in each run's records, indexed like its live bitmap, cost a cache line per two such blocks
 * and a TLB entry per run. Most words of a pointer-dense heap point into blocks reached already:
 * with the map and the reach bitmap both in cache, such a word costs two loads and no look at the
 * page descriptors. */
typedef struct pmap {
	uint64_t mark;                      /* mark number of the run's first block */
	uint32_t head;                      /* page index of the run's head */
	uint32_t nblk : 13;                 /* blocks that may be live (the carved ones); 0: nothing tracked */
	uint32_t colour : 12;               /* where block 0 starts past the head page, in 64-byte units:
	                                       a colour, or the offset of a run on a PF_WASHEAD page (up
	                                       to the block size: heap.c, run_colour) */
	uint32_t cls : 7;                   /* size class of a small run; 0 for a large block */
} pmap_t;

_Static_assert(PAGE_SIZE / ALIGN_MIN < (1u << 13), "a run's block count fits pmap_t.nblk");
_Static_assert(SMALL_MAX / 64 < (1u << 12), "a run's first block's offset fits pmap_t.colour");
_Static_assert(NCLASS <= (1u << 7), "a class fits pmap_t.cls");
#define MAGIC_SHIFT 40
static pmap_t *pmap;
static size_t pmap_cap;                 /* pages pmap (and marks) have room for */
static uint64_t *reach, *ind;           /* one bit per mark number */
static uint64_t nmarks;
/* floor(off / class_size) as (off * magic) >> 40 with magic = 2^40 / size + 1: exact for every off
 * below 2^19 (a small run is at most 512 KiB), as the error off * (magic * size - 2^40) stays below
 * 2^38; checked for every class and offset when this was written, and at every block boundary of
 * every run by debug builds (magic_exact). Class 0's magic is 0, so a large block's whole run is
 * block 0 of it. No division, and no need of the descriptor. */
static uint64_t cls_magic[NCLASS];

/* The multiply is monotonic in off, so it is exact everywhere once exact on both sides of every
 * block boundary of the run. */
static bool magic_exact(unsigned c)
{
	uint64_t d = class_size[c], run = (uint64_t)class_pages[c] << PAGE_SHIFT;
	for (uint64_t k = 1; k * d <= run; k++)
		if (((k * d * cls_magic[c]) >> MAGIC_SHIFT) != k || (((k * d - 1) * cls_magic[c]) >> MAGIC_SHIFT) != k - 1)
			return false;
	return true;
}

/* How many blocks a page's worth of map can number at most: a 16-byte class fills 64 KiB. */
#define MARKS_PER_PAGE (PAGE_SIZE / ALIGN_MIN)

static void build_map(void)
{
	leak_dir_t *d = leak_dir();
	size_t n = (scan_end - G.base) >> PAGE_SHIFT;
	uint64_t next = 0;
	for (size_t i = 0; i < n; i++) {
		const page_t *pg = &G.pages[i];
		size_t np = 0;
		pmap_t e = { 0 };
		if (pg->kind == PK_SMALL && atomic_load_explicit(&d[i].small, memory_order_relaxed)) {
			np = class_pages[pg->cls];
			e = (pmap_t){ .mark = next, .head = (uint32_t)i, .nblk = pg->capacity,
			              .colour = (uint32_t)((pg->start - page_addr(i)) >> 6) & 0xfff,
			              .cls = pg->cls };
		} else if (pg->kind == PK_LARGE) {
			np = pg->npages;
			e = (pmap_t){ .mark = next, .head = (uint32_t)i, .nblk = 1 };
		}
		if (!np) {
			pmap[i] = e;
			continue;
		}
		for (size_t j = 0; j < np && i + j < n; j++) pmap[i + j] = e;
		next += e.nblk;
		i += np - 1;
	}
	nmarks = next;
}

static inline bool bit_get(const uint64_t *m, uint64_t k) { return (m[k >> 6] >> (k & 63)) & 1; }
static inline void bit_put(uint64_t *m, uint64_t k) { m[k >> 6] |= 1ull << (k & 63); }

/* The index in its run of the tracked block v falls in, or -1; v must be below scan_end. */
static inline int64_t map_block(uintptr_t v, const pmap_t **ep)
{
	const pmap_t *e = &pmap[(v - G.base) >> PAGE_SHIFT];
	uint64_t off = (uint64_t)(v - page_addr(e->head)), c = (uint64_t)e->colour << 6;
	*ep = e;
	if (off < c) return -1;                /* in the run's colour, before block 0 */
	uint64_t k = ((off - c) * cls_magic[e->cls]) >> MAGIC_SHIFT;
	return k < e->nblk ? (int64_t)k : -1;
}

/* ---- finding the live block an address points into ---- */
typedef struct blk {
	uintptr_t start;
	size_t len;
	page_t *head;
	leak_small_t *t;                    /* small blocks: the run's records (the stack ids), else NULL */
	size_t bit;                         /* small blocks: the live-bitmap bit */
	uint64_t mk;                        /* mark number */
} blk_t;

/* Block k of e's run, without looking at its live bit. */
static void blk_fill(const pmap_t *e, size_t k, blk_t *b)
{
	page_t *pg = &G.pages[e->head];
	b->head = pg;
	b->mk = e->mark + k;
	if (e->cls) {
		b->len = pg->block_size;
		b->start = (uintptr_t)block_at(pg, k);
		b->bit = k;
		b->t = atomic_load_explicit(&leak_dir()[e->head].small, memory_order_relaxed);
	} else {
		b->len = (size_t)pg->npages << PAGE_SHIFT;
		b->start = page_addr(e->head);
		b->bit = 0;
		b->t = NULL;
	}
}

static bool blk_live(const blk_t *b)
{
	/* atomic: a thread that did not answer the stop signal may be freeing in this run */
	return !b->t || live_test(b->head, b->bit);
}

static bool find_block(uintptr_t v, blk_t *b)
{
	const pmap_t *e;
	if (v - G.base >= scan_end - G.base) return false;
	int64_t k = map_block(v, &e);
	if (k < 0) return false;
	blk_fill(e, (size_t)k, b);
	return blk_live(b);
}

static inline bool blk_reached(const blk_t *b) { return bit_get(reach, b->mk); }

/* The bytes of b the caller asked for: what the report counts, and what the scan reads (rounded
 * down to whole words) unless the program asked malloc_usable_size for the block. */
static size_t blk_asked(const blk_t *b)
{
	if (b->t) return heap_asked(b->head, (void *)b->start);
	return b->head->asked;
}

static uint32_t blk_record(const blk_t *b)
{
	return b->t ? b->t->stack[b->bit] : leak_dir()[page_idx(b->head)].large_stack;
}

/* The bytes of b the scan reads: the asked ones, or all of them once the program was told by
 * malloc_usable_size that it may use them (LEAK_USABLE). */
static size_t blk_scan_len(const blk_t *b)
{
	size_t n = blk_record(b) & LEAK_USABLE ? b->len : blk_asked(b);
	return n > b->len ? b->len : n;
}

/* ---- reading memory that may not be readable: a fault skips the rest of the OS page ---- */
/* What holds registers or block addresses while scanning lives in metadata: the library's own
 * data segment is scanned like any loaded object's, and must not keep blocks alive. */
typedef struct scratch {
	sigjmp_buf jb;                  /* where a fault while scanning resumes */
	uint64_t self_mk;               /* SCAN_INDIRECT: mark number of the leaked block being scanned */
	struct sigaction old_segv, old_bus; /* the handlers the guard replaced */
} scratch_t;
static scratch_t *SX;
static volatile int guard_on;

static void guard_handler(int sig, siginfo_t *si, void *uc)
{
	(void)si; (void)uc;
	if (guard_on) siglongjmp(SX->jb, 1);
	/* not ours: give the fault to whoever had it */
	sigaction(sig, sig == SIGSEGV ? &SX->old_segv : &SX->old_bus, NULL);
}

static void guard_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = guard_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &SX->old_segv);
	sigaction(SIGBUS, &sa, &SX->old_bus);
}

static void guard_remove(void)
{
	sigaction(SIGSEGV, &SX->old_segv, NULL);
	sigaction(SIGBUS, &SX->old_bus, NULL);
}

/* ---- marking ---- */
enum { SCAN_MARK, SCAN_INDIRECT };
static int scan_mode;

static void push(uintptr_t a)
{
	if (msp < MSTACK_CAP) mstack[msp++] = a;
	else moverflow = 1;                 /* marked but not queued: found again by a rescan */
}

/* A word seen while marking: the block it points into, unless reached already, is reached and
 * queued. The reach bit is tested before the live bit: almost every hit in a pointer-dense heap is
 * a block reached before, and that test needs neither the descriptor nor the live bitmap. */
static inline void see_word_mark(uintptr_t v)
{
	const pmap_t *e;
	int64_t k = map_block(v, &e);
	if (k < 0 || bit_get(reach, e->mark + (uint64_t)k)) return;
	blk_t b;
	blk_fill(e, (size_t)k, &b);
	if (!blk_live(&b)) return;
	bit_put(reach, b.mk);
	push(b.start);
}

/* A word seen in a leaked block (mark number SX->self_mk): another unreached block it points into
 * is pointed to by a leak, so indirect. */
static inline void see_word_indirect(uintptr_t v)
{
	const pmap_t *e;
	int64_t k = map_block(v, &e);
	if (k < 0) return;
	uint64_t mk = e->mark + (uint64_t)k;
	if (bit_get(reach, mk) || mk == SX->self_mk || bit_get(ind, mk)) return;
	blk_t b;
	blk_fill(e, (size_t)k, &b);
	if (blk_live(&b)) bit_put(ind, mk);
}

static void scan_words(uintptr_t lo, uintptr_t hi)
{
	const uintptr_t base = G.base, span = scan_end - G.base;
	const uintptr_t *w = (const uintptr_t *)lo, *end = (const uintptr_t *)hi;
	if (scan_mode == SCAN_MARK) {
		for (; w < end; w++) {
			uintptr_t v = *w;
			if (v - base < span) see_word_mark(v);
		}
	} else {
		for (; w < end; w++) {
			uintptr_t v = *w;
			if (v - base < span) see_word_indirect(v);
		}
	}
}

static void check_time(void)
{
	if (!timed_out && os_now_ms() - t_start > TIME_CAP_MS) timed_out = 1;
}

/* Scan [lo, hi) word by word, an OS page at a time; a page that faults is skipped. */
/* With no swap, a page that is not resident was never written: it reads as zero (anonymous) or
 * as the file's bytes, and holds no heap pointer. Large regions are looked at through mincore,
 * 2 MiB at a time, and only resident pages are read: a program's sparse 24 GiB mapping (a
 * runtime's reserved heap) took 2.6 s per GiB to read, page by page, and past 30 s the check
 * was abandoned. With swap, a swapped-out page is not resident either: every page is read. */
static int no_swap;                         /* set per check: 1 when SwapTotal is 0 */
static bool shared_file;                    /* the mapping being scanned is a file's shared pages:
                                               only the resident ones are read, swap or not (the
                                               rest are the file's bytes, and reading them is I/O) */
#define RESIDENT_CHUNK 512                  /* pages per mincore call */
#define RESIDENT_MIN ((size_t)64 << 10)     /* regions smaller than this are read whole */

static unsigned char res_vec[RESIDENT_CHUNK];
static uintptr_t res_lo = UINTPTR_MAX;     /* first page res_vec describes (static: kept across the
                                              guard's longjmp) */

static bool page_resident(uintptr_t page, uintptr_t hi)
{
	unsigned char *vec = res_vec;
	if (page < res_lo || page >= res_lo + (uintptr_t)RESIDENT_CHUNK * OS_PAGE) {
		res_lo = page;
		size_t len = hi - page < (size_t)RESIDENT_CHUNK * OS_PAGE ? align_up(hi - page, OS_PAGE)
		                                                         : (size_t)RESIDENT_CHUNK * OS_PAGE;
		if (os_syscall6(SYS_mincore, (long)page, (long)len, (long)vec, 0, 0, 0) != 0)
			memset(vec, 1, RESIDENT_CHUNK);     /* cannot tell: read it */
	}
	return vec[(page - res_lo) / OS_PAGE] & 1;
}

static void scan_region(uintptr_t lo, uintptr_t hi)
{
	volatile uintptr_t pos = align_up(lo, sizeof(uintptr_t));
	hi = align_down(hi, sizeof(uintptr_t));
	volatile bool sparse = (no_swap && hi - pos >= RESIDENT_MIN) || shared_file;
	res_lo = UINTPTR_MAX;
	if (sigsetjmp(SX->jb, 0)) pos = align_down(pos, OS_PAGE) + OS_PAGE;
	guard_on = 1;
	unsigned pages = 0;
	while (pos < hi && !timed_out) {
		uintptr_t page = align_down(pos, OS_PAGE), end = page + OS_PAGE;
		if (end > hi) end = hi;
		if (!sparse || page_resident(page, hi)) scan_words(pos, end);
		pos = end;
		if ((++pages & 1023) == 0) check_time();   /* a huge region is abandoned like a huge heap */
	}
	guard_on = 0;
}


static void scan_block_at(uintptr_t a)
{
	blk_t b;
	if (!find_block(a, &b)) return;
	size_t n = blk_scan_len(&b);
	scan_region(b.start, b.start + n);
}

/* The first lines of the block popped next start coming in while this one is scanned: blocks are
 * popped in no address order, and the hardware's streams stop at each 4 KiB page, so without this
 * every block would start with a wait for memory (measured: the 1 GiB case's scan a third faster). */
#define PREFETCH_LINES 8

static void drain(void)
{
	size_t k = 0;
	while (msp > 0 && !timed_out) {
		uintptr_t a = mstack[--msp];
		if (msp > 0)
			for (size_t l = 0; l < PREFETCH_LINES; l++) __builtin_prefetch((const char *)mstack[msp - 1] + 64 * l);
		scan_block_at(a);
		if ((++k & 4095) == 0) check_time();
	}
}

/* ---- every live block, in address order ---- */
typedef void (*blk_fn)(const blk_t *b);

static void for_each_block(blk_fn fn)
{
	size_t frontier = (scan_end - G.base) >> PAGE_SHIFT;
	for (size_t i = 0; i < frontier && !timed_out; i++) {
		const pmap_t *e = &pmap[i];
		if (e->head != i || !e->nblk) continue;    /* a later page of a run, or nothing tracked */
		blk_t b;
		if (!e->cls) {
			blk_fill(e, 0, &b);
			fn(&b);
			continue;
		}
		const page_t *pg = &G.pages[i];
		if (__atomic_load_n(&pg->kind, __ATOMIC_ACQUIRE) != PK_SMALL) continue;   /* given back since */
		size_t bits = class_blocks[pg->cls];   /* not capacity: a thread still running may carve */
		for (size_t w = 0; w < (bits + 63) / 64; w++) {
			uint64_t v = __atomic_load_n(&page_live(pg)[w], __ATOMIC_RELAXED);
			while (v) {
				size_t k = w * 64 + (size_t)__builtin_ctzll(v);   /* a live bit's number is its block's index */
				v &= v - 1;
				if (k >= e->nblk) continue;
				blk_fill(e, k, &b);
				fn(&b);
			}
		}
	}
}

static void clear_marks(void)
{
	size_t words = (size_t)(nmarks + 63) / 64;
	memset(reach, 0, words * sizeof *reach);
	memset(ind, 0, words * sizeof *ind);
}

/* A block that is free but still has its live bit (a remote free its owner has not collected):
 * counted as reached, so it is neither reported nor scanned. */
static void mark_free(uintptr_t a)
{
	blk_t b;
	if (find_block(a, &b) && b.t && b.start == a) bit_put(reach, b.mk);
}

/* Blocks other threads freed whose owner has not taken them back: set in their run's freed
 * bitmap, and live until then. */
static void mark_remote_frees(void)
{
	size_t frontier = (scan_end - G.base) >> PAGE_SHIFT;
	for (size_t i = 0; i < frontier; i++) {
		page_t *pg = &G.pages[i];
		if (pg->kind != PK_SMALL) continue;    /* pending is not read: a freer stopped before it
		                                          set it has already set the block's bit */
		const _Atomic(uint64_t) *freed = page_freed(pg);
		for (size_t w = 0; w < (class_blocks[pg->cls] + 63u) / 64; w++) {
			uint64_t v = atomic_load_explicit(&freed[w], memory_order_acquire);
			while (v) {
				size_t k = w * 64 + (size_t)__builtin_ctzll(v);
				v &= v - 1;
				mark_free((uintptr_t)block_at(pg, k));
			}
		}
	}
}

/* ---- roots ---- */
static bool may_be_stack;               /* the mapping being scanned may be a thread's stack */

/* [lo, hi), less everything below a parked thread's stack pointer when one lies inside and the
 * mapping may be a stack. */
static void scan_root(uintptr_t lo, uintptr_t hi)
{
	for (int i = 0; may_be_stack && i < stop_threads_n(); i++) {
		const stop_thread_t *t = stop_thread(i);
		if (t && t->sp >= lo && t->sp < hi) {
			uintptr_t from = t->sp > 128 ? t->sp - 128 : 0;   /* the x86-64 red zone is live */
			if (from > lo) lo = from;
		}
	}
	if (lo < hi) scan_region(lo, hi);
}

/* Outside the range: [lo, hi) less the library's own metadata. */
static void scan_outside(uintptr_t lo, uintptr_t hi)
{
	const range_span_t *meta;
	size_t nmeta = range_meta_spans(&meta);
	for (size_t i = 0; i < nmeta && lo < hi; i++) {
		if (meta[i].hi <= lo || meta[i].lo >= hi) continue;
		if (meta[i].lo > lo) scan_outside(lo, meta[i].lo);
		lo = meta[i].hi;
	}
	/* the descriptors, and G itself (G.base is the address of the range's first block) */
	const uintptr_t skip[2][2] = {
		{ (uintptr_t)G.pages, (uintptr_t)G.pages + G.npages * sizeof(page_t) },
		{ (uintptr_t)&G, (uintptr_t)(&G + 1) },
	};
	for (int k = 0; k < 2 && lo < hi; k++) {
		if (skip[k][1] <= lo || skip[k][0] >= hi) continue;
		if (skip[k][0] > lo) scan_outside(lo, skip[k][0]);
		lo = skip[k][1];
	}
	if (lo < hi) scan_root(lo, hi);
}

/* Inside the range: only what the program mapped (served mappings, its MAP_FIXED pages, foreign
 * mappings); heap blocks are reached through pointers, never roots. */
static void scan_inside(uintptr_t lo, uintptr_t hi)
{
	for (uintptr_t a = align_down(lo, PAGE_SIZE); a < hi; a += PAGE_SIZE) {
		size_t i = page_index((void *)a);
		page_t *h = leak_head_of(&G.pages[i]);
		uintptr_t s = a, e = a + PAGE_SIZE;
		if (h->kind == PK_MMAP) {
			uintptr_t run = page_addr(page_idx(h));
			if (s < run + h->map_lo) s = run + h->map_lo;
			if (e > run + h->map_hi) e = run + h->map_hi;
		} else if (h->kind != PK_MMAP_FIXED && h->kind != PK_FOREIGN)
			continue;
		if (s < lo) s = lo;
		if (e > hi) e = hi;
		if (s < e) scan_root(s, e);
	}
}

/* Which mappings hold roots: every writable one the program can store a pointer in (data
 * segments, bss, anonymous memory, shared memory: /dev/zero, memfd, SysV, shm_open, a file
 * mapped shared and writable), and anonymous ones the program made read-only after filling
 * them; never plain read-only file data. */
static bool is_root_mapping(const maps_entry_t *m)
{
	if (m->perms[0] != 'r') return false;
	if (m->perms[3] == 'p') return m->perms[1] == 'w' || (m->anon && m->path[0] != '[');
	return m->perms[1] == 'w';
}

static uintptr_t file_end;              /* end of the last file-backed mapping root_cb was shown */
static uintptr_t guard_end;             /* end of the last private PROT_NONE mapping it was shown */

/* Whether a parked thread's stack pointer lies in [lo, hi). */
static bool has_parked_sp(uintptr_t lo, uintptr_t hi)
{
	for (int i = 0; i < stop_threads_n(); i++) {
		const stop_thread_t *t = stop_thread(i);
		if (t && t->sp >= lo && t->sp < hi) return true;
	}
	return false;
}

static int root_cb(const maps_entry_t *m, void *arg)
{
	(void)arg;
	bool after_file = m->lo == file_end, after_guard = m->lo == guard_end;
	file_end = !m->anon && m->path[0] == '/' ? m->hi : 0;
	guard_end = strncmp(m->perms, "---p", 4) == 0 ? m->hi : 0;
	if (!is_root_mapping(m)) return 0;
	/* A stack is [stack] or anonymous memory, but not an object's bss (anonymous, right after
	 * the object's file-backed data): a stack pointer inside a static array there (a thread
	 * stack or a signal stack the program made of one) must not hide the globals below it. */
	may_be_stack = strcmp(m->path, "[stack]") == 0 || (m->anon && !m->path[0] && !after_file);
	shared_file = m->perms[3] == 's' && !m->anon && m->path[0] == '/' &&
	              strncmp(m->path, "/dev/zero", 9) != 0 && strncmp(m->path, "/SYSV", 5) != 0 &&
	              strncmp(m->path, "/memfd:", 7) != 0;
	uintptr_t lo = m->lo, hi = m->hi, rlo = G.base, rhi = G.base + G.size;
	/* The stack of a thread that has ended, which glibc keeps for the next thread: only its
	 * descriptor at the top (pthread_join's value is still to be taken from there), not the
	 * dead stack and TLS below, where stale pointers hid the leaks of ended threads. */
	if (may_be_stack && after_guard && m->perms[1] == 'w' && (hi <= rlo || lo >= rhi) &&
	    !has_parked_sp(lo, hi)) {
		uintptr_t pd = stop_dead_stack(lo, hi);
		if (pd) lo = pd;
	}
	if (lo < rlo) scan_outside(lo, hi < rlo ? hi : rlo);
	if (hi > rhi) scan_outside(lo > rhi ? lo : rhi, hi);
	may_be_stack = true;                /* the range: served mappings hold threads' stacks */
	if (lo < rhi && hi > rlo) scan_inside(lo > rlo ? lo : rlo, hi < rhi ? hi : rhi);
	shared_file = false;                /* (blocks are read whole) */
	drain();
	check_time();
	return timed_out;
}

static void save_regs(volatile uintptr_t *r)
{
#if defined(__x86_64__)
	__asm__ volatile("movq %%rbx, 0(%0)\n\tmovq %%rbp, 8(%0)\n\tmovq %%r12, 16(%0)\n\t"
	                 "movq %%r13, 24(%0)\n\tmovq %%r14, 32(%0)\n\tmovq %%r15, 40(%0)"
	                 : : "r"(r) : "memory");
#elif defined(__aarch64__)
	__asm__ volatile("stp x19, x20, [%0, #0]\n\tstp x21, x22, [%0, #16]\n\tstp x23, x24, [%0, #32]\n\t"
	                 "stp x25, x26, [%0, #48]\n\tstp x27, x28, [%0, #64]\n\tstp x29, x30, [%0, #80]"
	                 : : "r"(r) : "memory");
#else
	(void)r;
#endif
}

/* ---- classification: direct or indirect, and into the report's groups ---- */
static void indirect_cb(const blk_t *b)
{
	if (blk_reached(b)) return;
	size_t n = blk_scan_len(b);
	SX->self_mk = b->mk;
	scan_region(b->start, b->start + n);
}

static void collect_cb(const blk_t *b)
{
	if (blk_reached(b)) return;
	/* a large block being made: a thread stopped in malloc between taking its pages and
	 * setting its size holds only the run's descriptor (region_alloc; also a 0-byte memalign) */
	if (!b->t && b->head->asked == 0) return;
	int indirect = bit_get(ind, b->mk);
	leak_group_add(blk_record(b) & ~LEAK_USABLE, indirect, blk_asked(b));
}

/* ---- the check ---- */
/* Room for the scan map and the marks of every page below the frontier, and some more (it may
 * grow before the threads stop). Kept for the next check; a larger heap takes a larger one, the
 * old one is lost (metadata is never freed), so the sizes grow by half at least. The marks are
 * sized for the worst case (16-byte blocks) but only the pages the numbering uses get touched. */
static int map_reserve(void)
{
	size_t want = range_frontier();
	if (want <= pmap_cap) return 0;
	want += want / 2 + 64;
	if (want < pmap_cap + pmap_cap / 2) want = pmap_cap + pmap_cap / 2;
	if (want > G.npages) want = G.npages;
	size_t mwords = want * (MARKS_PER_PAGE / 64);
	pmap_t *m = meta_alloc(want * sizeof *m);
	uint64_t *r = meta_alloc(mwords * sizeof *r), *i = meta_alloc(mwords * sizeof *i);
	if (!m || !r || !i) return -1;
	for (unsigned c = 1; c < NCLASS; c++) {
		cls_magic[c] = (((uint64_t)1 << MAGIC_SHIFT) / class_size[c]) + 1;
		CONTIG_ASSERT(magic_exact(c));
	}
	pmap = m;
	reach = r;
	ind = i;
	pmap_cap = want;
	return 0;
}

static void check_lock_renew(void) { pthread_mutex_init(&check_lock, NULL); }

static void loose_report(void)
{
	log_line("leak check: skipped: a thread that could not be stopped (it blocks the signal the "
	         "check stops threads with, or the program handles that signal) was running; no leaks counted");
}

static int prepare(void)
{
	if (!mstack) mstack = meta_alloc(MSTACK_CAP * sizeof *mstack);
	if (!SX) SX = meta_alloc(sizeof *SX);
	if (!mstack || !SX || !leak_dir_make() || map_reserve() != 0 || leak_groups_reset() != 0) return -1;
	msp = 0;
	moverflow = 0;
	timed_out = 0;
	no_swap = maps_swap_total() == 0;
	return 0;
}

static void rescan_cb(const blk_t *b)
{
	if (blk_reached(b)) scan_block_at(b->start);
}

/* The check; 0 when it counted, -1 when it was skipped (one line says why). */
static NOINLINE int run_check(uintptr_t sp, const volatile uintptr_t *regs, size_t *bytes, size_t *blocks)
{
	*bytes = *blocks = 0;
	if (prepare() != 0) {
		log_line("leak check: no memory for its tables; skipped");
		return -1;
	}
	/* Without the maps there are no roots, and every block would look leaked (a chroot without
	 * /proc, no /proc mounted, or every descriptor in use). */
	int fd = os_open_proc("maps");
	if (fd < 0) {
		log_line("leak check: skipped: /proc/self/maps cannot be read (no /proc, or no free file "
		         "descriptor); no leaks counted");
		return -1;
	}
	os_close(fd);
	t_start = os_now_ms();
	stop_result_t st = stop_world(sp, regs, 12);
	if (st != STOP_QUIET) {
		if (st == STOP_NOMEM) log_line("leak check: no memory for its tables; skipped");
		else if (st == STOP_NOTASKS)
			log_line("leak check: skipped: the threads cannot be listed (/proc/self/task cannot be "
			         "read, or there are more than the check can stop); no leaks counted");
		else loose_report();
		return -1;
	}
	/* The heap's extent once the other threads are stopped: read before, it would miss the pages
	 * they grew into meanwhile, whose blocks may be all that reaches older ones (a new block at
	 * the head of a chain of remote frees, say), and those would look leaked. */
	size_t frontier = range_frontier();
	scan_end = G.base + ((frontier < pmap_cap ? frontier : pmap_cap) << PAGE_SHIFT);
	guard_install();
	build_map();
	clear_marks();
	mark_remote_frees();
	scan_mode = SCAN_MARK;
	for (int i = 0; i < stop_threads_n(); i++) {
		const stop_thread_t *t = stop_thread(i);
		if (t) scan_region((uintptr_t)t->regs, (uintptr_t)(t->regs + STOP_NREGS));
	}
	drain();
	file_end = guard_end = 0;
	bool no_maps = maps_scan(0, UINTPTR_MAX, root_cb, NULL) < 0;
	while (moverflow && !timed_out) {
		moverflow = 0;
		for_each_block(rescan_cb);
		drain();
	}
	scan_mode = SCAN_INDIRECT;
	for_each_block(indirect_cb);
	for_each_block(collect_cb);
	guard_remove();
	if (!stop_resume()) {
		loose_report();
		return -1;
	}
	if (no_maps) {
		log_line("leak check: skipped: /proc/self/maps cannot be read; no leaks counted");
		return -1;
	}
	if (timed_out) {
		log_line("leak check: abandoned after 30 s (the heap is too large to scan); no leaks counted");
		return -1;
	}
	leak_report(bytes, blocks);
	return 0;
}

int leak_check(int at_exit, size_t *bytes, size_t *blocks)
{
	size_t lb = 0, ln = 0;
	if (!G.slow_only || atomic_load(&G.state) != 2) {
		if (bytes) *bytes = 0;
		if (blocks) *blocks = 0;
		return -1;
	}
	volatile uintptr_t regs[12] = { 0 };
	save_regs(regs);
	heap_collect_all();
	static _Atomic(int) forkable;
	if (!atomic_exchange(&forkable, 1))
		pthread_atfork(NULL, NULL, check_lock_renew);   /* a fork during a check: the child's lock */
	/* (a report into a pipe whose reader has gone raises no SIGPIPE: os_write, through which
	 * it goes, blocks it and takes back one it raised) */
	pthread_mutex_lock(&check_lock);
	int done = run_check((uintptr_t)regs, regs, &lb, &ln);
	pthread_mutex_unlock(&check_lock);
	if (bytes) *bytes = lb;
	if (blocks) *blocks = ln;
	if (at_exit && ln && G.cfg.leaks == LEAKS_ERROR) {
		(void)fflush(NULL);             /* the program's own output first; nothing to do if it fails */
		_exit(23);
	}
	return done == 0 ? 0 : -2;
}
