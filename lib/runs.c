/* runs.c - runs of 64 KiB pages inside the range: first fit from size bins, boundary-tag
 * coalescing, splitting, trimming and resizing in place, the small runs' out-of-band bitmaps,
 * and the committed accounting. Runs under the range lock; the small-block paths never come here. */
#include "region_int.h"
#include "classes.h"
#include "fmt.h"
#include "os.h"
#include <errno.h>
#include <string.h>

region_state_t R;

static inline uint32_t now_stamp(void) { return (uint32_t)os_now_ms(); }

int region_init(void)
{
	R.next_purge = UINT64_MAX;
	if (range_init() != 0) return -1;
	purge_init_limit();
	return 0;
}

void region_fork_child(void)
{
	range_fork_child();
	purge_fork_child();
}

/* A small run's out-of-band metadata: its remote_t line, its page_hot_t, its live bitmap
 * (returned), its freed bitmap. */
static page_hot_t *bitmap_get_locked(void)
{
	uint64_t *chunk = R.bitmaps;
	if (chunk) {
		R.bitmaps = ((remote_t *)(void *)chunk)->chunk_next;
		memset(chunk, 0, META_CHUNK);
	} else {
		/* fresh metadata pages read as zero: what the run never uses is never touched */
		chunk = meta_alloc_locked(META_CHUNK);
		if (!chunk) return NULL;
	}
	return (page_hot_t *)(void *)(chunk + sizeof(remote_t) / sizeof(uint64_t));
}

static void bitmap_put_locked(page_hot_t *bm)
{
	uint64_t *chunk = (uint64_t *)(void *)bm - sizeof(remote_t) / sizeof(uint64_t);
	((remote_t *)(void *)chunk)->chunk_next = R.bitmaps;
	R.bitmaps = chunk;
}

/* ---- free runs ---- */
static unsigned bin_of(size_t n)
{
	if (n <= 32) return (unsigned)n - 1;
	unsigned k = 63u - (unsigned)__builtin_clzl(n);          /* 2^k <= n, k >= 5 */
	unsigned b = 32u + (k - 5u) * 4u + (unsigned)((n >> (k - 2)) & 3u);
	return b < NBINS ? b : NBINS - 1;
}

/* A free run's set is fixed by PF_RUNDIRTY while it is binned: whoever changes that flag takes
 * the run out first (purge_run does). */
void bin_insert(size_t idx)
{
	page_t *h = P(idx);
	unsigned b = bin_of(h->npages), d = (h->flags & PF_RUNDIRTY) != 0;
	h->prev = 0;
	h->next = R.bin[d][b];
	if (R.bin[d][b]) P(R.bin[d][b] - 1)->prev = (uint32_t)idx + 1;
	R.bin[d][b] = (uint32_t)idx + 1;
	R.binmask[d] |= 1ull << b;
}

void bin_remove(size_t idx)
{
	page_t *h = P(idx);
	unsigned b = bin_of(h->npages), d = (h->flags & PF_RUNDIRTY) != 0;
	if (h->prev) P(h->prev - 1)->next = h->next;
	else R.bin[d][b] = h->next;
	if (h->next) P(h->next - 1)->prev = h->prev;
	if (!R.bin[d][b]) R.binmask[d] &= ~(1ull << b);
	if (d && h->stamp != CLEAN_STAMP) R.dirty_runs--;
}

/* Make [idx, idx+n) one free run in its bin, merging with free neighbours of the same kind:
 * recycled with recycled (dirty: freed since the range grew, purged since or not), fresh with
 * fresh. A recycled run merged into the fresh top of the heap would make the whole top
 * "recycled", and runs taken from its far end would touch new memory while freed memory waits
 * for the purger (a string builder's heap grew to 4x its live size so). Which kind a run is
 * follows from the calls alone, never from when the purger ran: placement is deterministic. A
 * recycled run with stamp CLEAN_STAMP has no dirty page (purged). */
void run_insert_free(size_t idx, size_t n, uint32_t stamp, bool dirty)
{
	if (idx > 0 && P(idx - 1)->kind == PK_FREE) {
		size_t ph = idx - 1 - P(idx - 1)->head_off;
		page_t *prev = P(ph);
		if (((prev->flags & PF_RUNDIRTY) != 0) == dirty) {
			bin_remove(ph);
			if (dirty && prev->stamp < stamp) stamp = prev->stamp;
			n += idx - ph;
			idx = ph;
		}
	}
	if (idx + n < range_frontier() && P(idx + n)->kind == PK_FREE) {
		page_t *next = P(idx + n);
		if (((next->flags & PF_RUNDIRTY) != 0) == dirty) {
			bin_remove(idx + n);
			if (dirty && next->stamp < stamp) stamp = next->stamp;
			n += next->npages;
		}
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
	if (dirty && h->stamp != CLEAN_STAMP) {
		R.dirty_runs++;
		purge_due_locked(h->stamp);
	}
	bin_insert(idx);
}

/* First fit in one set: the bin of n (checking sizes, for the ranged bins), then any larger
 * non-empty bin. */
static size_t find_fit_in(unsigned d, size_t n)
{
	unsigned b = bin_of(n);
	if (b >= 32 || b == NBINS - 1) {
		for (uint32_t i = R.bin[d][b]; i; i = P(i - 1)->next)
			if (P(i - 1)->npages >= n) return i - 1;
		b++;
	}
	if (b >= NBINS) return SIZE_MAX;
	uint64_t m = R.binmask[d] & (~0ull << b);
	if (!m) return SIZE_MAX;
	b = (unsigned)__builtin_ctzll(m);
	if (b == NBINS - 1) {
		for (uint32_t i = R.bin[d][b]; i; i = P(i - 1)->next)
			if (P(i - 1)->npages >= n) return i - 1;
		return SIZE_MAX;
	}
	return R.bin[d][b] - 1;
}

/* Blocks take dirty runs first (their pages cost no new memory), then clean ones. Mappings
 * take clean runs first: they must read as zero, and dirty pages would have to be given back
 * to the OS and faulted in again for that, while the blocks that come next can use them. */
static size_t find_fit(size_t n, uint8_t kind)
{
	unsigned first = kind != PK_MMAP;
	size_t i = find_fit_in(first, n);
	return i != SIZE_MAX ? i : find_fit_in(!first, n);
}
/* Growth hands new usable pages to the bins as clean free runs. */
static void add_usable(size_t idx, size_t n) { run_insert_free(idx, n, CLEAN_STAMP, false); }

/* Under RLIMIT_AS: give the free runs at the top of the heap back to the address space
 * (range_release_top_locked) once they come to RELEASE_MIN. always: whenever they do (after a
 * purge: those pages were idle purge_ms); else only while the range maps more than half the
 * limit, when the next thread or file mapping of the program may not fit (a program that fills
 * the limit with blocks, frees them and starts a thread; glibc unmaps its large chunks). */
#define RELEASE_MIN (((size_t)4 << 20) >> PAGE_SHIFT)
void release_top_locked(bool always)
{
	uint64_t lim = range_as_limit();
	if (!lim || (!always && ((uint64_t)range_mapped_pages() << PAGE_SHIFT) <= lim / 2)) return;
	size_t f = range_frontier(), lo = f;
	while (lo > 0 && P(lo - 1)->kind == PK_FREE) {
		size_t h = lo - 1 - P(lo - 1)->head_off;         /* a free run's tail is exact */
		if (P(h)->kind != PK_FREE || h + P(h)->npages != lo) break;
		lo = h;
	}
	size_t floor = lo < range_reserved_end() ? range_release_floor_locked() : 0;
	while (lo < floor && lo < f) lo += P(lo)->npages;    /* whole runs only */
	if (lo >= f || f - lo < RELEASE_MIN) return;
	size_t dirty = 0;
	for (size_t i = lo; i < f; i += P(i)->npages) bin_remove(i);
	for (size_t i = lo; i < f; i++) dirty += (P(i)->flags & PF_DIRTY) != 0;
	R.committed -= dirty;
	R.purged += dirty;
	range_release_top_locked(lo);
}

/* ---- runs ---- */
static size_t run_len(const page_t *h)
{
	return h->kind == PK_SMALL ? class_pages[h->cls] : h->npages;
}

static unsigned in_dirty_count(const page_t *h)
{
	return (h->flags & PF_RUNDIRTY) && h->stamp != CLEAN_STAMP;
}

/* A recycled run and a fresh one never merge when they are freed (blocks are fitted in the
 * recycled set first, so that resident pages are used again before new ones are touched). When
 * nothing fits and the range cannot grow, that split must not refuse a request the free pages
 * hold: merge every pair of free runs that lie side by side into one recycled run (its oldest
 * dirty stamp kept). Whether any merged. */
static bool merge_sets_locked(void)
{
	bool any = false;
	size_t f = range_frontier();
	for (size_t i = 0; i < f;) {
		page_t *a = P(i);
		if (a->kind != PK_FREE) {
			size_t len = a->kind == PK_SMALL || a->kind == PK_LARGE || a->kind == PK_MMAP ? run_len(a) : 1;
			i += len ? len : 1;
			continue;
		}
		size_t j = i + a->npages;
		if (j >= f || P(j)->kind != PK_FREE) { i = j; continue; }
		const page_t *b = P(j);
		size_t n = a->npages + b->npages;
		uint32_t st = CLEAN_STAMP;
		if (in_dirty_count(a)) st = a->stamp;
		if (in_dirty_count(b) && (st == CLEAN_STAMP || b->stamp < st)) st = b->stamp;
		bin_remove(i);
		bin_remove(j);
		/* one recycled run (the run before i is not free: it would have merged with i's) */
		run_insert_free(i, n, st, true);
		any = true;                     /* and look at what follows the merged run */
	}
	return any;
}

page_t *region_alloc(size_t n, uint8_t kind, int flags) { return region_alloc_aligned(n, 0, kind, flags); }

static bool free_locked(page_t *h, uint32_t stamp);

/* The open chunk's untaken runs become free runs; true when the purger is wanted. */
static bool stash_runs_free_locked(void)
{
	bool start = false;
	while (R.nhuge > 0) start |= free_locked(R.huge[--R.nhuge], now_stamp());
	return start;
}

bool huge_stash_release_locked(void)
{
	bool start = stash_runs_free_locked();
	if (R.ahead) {
		huge_chunk_free_locked(R.ahead, &start);
		R.ahead = NULL;
	}
	if (R.filling && !R.fill_busy) {        /* one the purger is faulting in stays */
		huge_chunk_free_locked(R.filling, &start);
		R.filling = NULL;
	}
	return start;
}

void huge_chunk_free_locked(page_t *c, bool *start)
{
	for (size_t i = 0; i < HUGE_PAGES; i++) *start |= free_locked(&c[i], now_stamp());
}

/* A new huge chunk, advised; NULL when the range has none (flags: RUN_CHUNK's). */
static page_t *chunk_cut(void)
{
	page_t *c = region_alloc_aligned(HUGE_PAGES, HUGE_SIZE, PK_SMALL, RUN_CHUNK);
	if (c) region_huge_advise(page_addr(page_idx(c)));
	return c;
}

/* A one-page small run for a heap. A big heap (huge.c) takes one from the recycled set when it
 * has one (its pages may be resident already), else the next run of the open huge chunk, cutting
 * a new chunk when that is used up; a spare (RUN_SPARE) never cuts a chunk, and does not go
 * outside one either: NULL instead. Any other heap: region_alloc. */
page_t *region_alloc_run(bool big, int flags)
{
	if (!big || !region_huge_ok()) return region_alloc(1, PK_SMALL, flags);
	range_lock();
	if (find_fit_in(1, 1) != SIZE_MAX) {
		range_unlock();
		return region_alloc(1, PK_SMALL, flags);
	}
	if (R.nhuge == 0) {
		/* The chunk cut ahead, when there is one, whether the purger has faulted it in yet or
		 * not (while it is at it, wait: the rest would be this thread's faults anyway). Always
		 * that one: which chunk comes next must not depend on the purger's timing (SPEC,
		 * Determinism). */
		huge_fill_wait_locked();
		if (R.nhuge > 0) {              /* another thread opened one meanwhile */
			page_t *pg = R.huge[--R.nhuge];
			range_unlock();
			return pg;
		}
		page_t *c = R.ahead ? R.ahead : R.filling;
		R.ahead = R.filling = NULL;
		range_unlock();
		if (!c) {
			if (flags & RUN_SPARE) return NULL;
			c = chunk_cut();
			if (!c) return region_alloc(1, PK_SMALL, flags);
		}
		range_lock();
		bool ahead = huge_ahead_wanted_locked();
		range_unlock();
		/* cut the next one now, while the lock is not held, for the purger to fault in */
		page_t *next = ahead ? chunk_cut() : NULL;
		range_lock();
		R.chunks_cut++;
		/* the first run is the caller's, the rest wait, lowest address first; runs another
		 * thread's chunk left over go back, and so does a chunk ahead that another thread
		 * cut meanwhile */
		bool start = stash_runs_free_locked();
		for (size_t i = HUGE_PAGES; i-- > 1;) R.huge[R.nhuge++] = &c[i];
		if (next) {
			if (R.ahead || R.filling) {
				huge_chunk_free_locked(next, &start);
			} else {
				R.filling = next;
				purger_wake_locked();
				start |= purger_wanted_locked();
			}
		}
		range_unlock();
		if (start) purger_start();
		return c;
	}
	page_t *pg = R.huge[--R.nhuge];
	range_unlock();
	return pg;
}

/* Clear [a, a + len), pages of a freed block the purger has not given back yet, for a block that
 * must read as zero (calloc). A big freed block is often sparse, a zeroed table the program
 * touched in places: a memset would make every page of it resident (a 64 MiB calloc after the
 * free of one that was only read took 4 ms and 64 MiB). So past ZERO_ASK bytes the kernel says
 * which OS pages are resident: a window mostly not is given back whole (it reads as zero on its
 * next touch), else its resident pages are cleared and the rest given back. A page the kernel
 * swapped out counts as not resident and is dropped, not read back: the same zeros. */
#define ZERO_ASK    ((size_t)1 << 20)
#define ZERO_WINDOW 2048u                     /* OS pages asked about at once: 8 MiB */
static void zero_dirty(uintptr_t a, size_t len)
{
	unsigned char vec[ZERO_WINDOW];
	while (len >= ZERO_ASK) {
		size_t n = len < (size_t)ZERO_WINDOW * OS_PAGE ? len : (size_t)ZERO_WINDOW * OS_PAGE;
		size_t np = n / OS_PAGE, res = 0;
		if (os_resident(a, n, vec) != 0) break;
		for (size_t k = 0; k < np; k++) res += vec[k] & 1;
		if (res * 2 < np) {
			os_decommit(a, n);
		} else {
			for (size_t k = 0; k < np;) {
				size_t m = k;
				while (m < np && (vec[m] & 1) == (vec[k] & 1)) m++;
				if (vec[k] & 1) memset((void *)(a + k * OS_PAGE), 0, (m - k) * OS_PAGE);
				else os_decommit(a + k * OS_PAGE, (m - k) * OS_PAGE);
				k = m;
			}
		}
		a += n;
		len -= n;
	}
	memset((void *)a, 0, len);
}

/* Pages [idx, idx + n) become a run of kind: each a PK_CONT page of it (the head's kind is set
 * last, by the caller, once its fields are), with its flags for the run (RUN_*). Returns how
 * many were clean (newly committed, unless RUN_RESERVE); *undirtied counts the dirty pages a
 * reservation takes (decommitted by the caller, RUN_ZERO: committed no more). The masks are
 * worked out once, not per page: a large block's pages cost a few instructions each. */
static size_t take_pages_locked(size_t idx, size_t n, uint8_t kind, int flags, size_t *undirtied)
{
	uint8_t keep = (uint8_t)~(PF_RUNDIRTY | PF_NEEDZERO | PF_RESV | PF_WASHEAD);
	/* PF_WASHEAD stays on a small run's head, and on every page of a chunk (each a head) */
	uint8_t keep_head = kind == PK_SMALL ? (uint8_t)(keep | PF_WASHEAD) : keep;
	uint8_t keep_rest = kind == PK_SMALL && (flags & RUN_CHUNK) ? keep_head : keep;
	uint8_t set = flags & RUN_CHUNK ? PF_HUGE : 0;
	/* a dirty page handed out to a caller that needs zeroes: PF_DIRTY (1) moved up to PF_NEEDZERO */
	uint8_t zero = flags & RUN_ZERO ? PF_NEEDZERO : 0;
	_Static_assert(PF_DIRTY << 1 == PF_NEEDZERO, "PF_NEEDZERO is PF_DIRTY shifted once");
	size_t clean = 0;
	/* a reservation's pages (rare) in a loop of their own, so that a block's loop tests nothing */
	if (flags & RUN_RESERVE) {
		size_t dirty_taken = 0;
		for (size_t i = idx; i < idx + n; i++) {
			page_t *pg = P(i);
			uint8_t f = pg->flags & (i == idx ? keep_head : keep_rest);
			clean += ~f & PF_DIRTY;
			dirty_taken += f & PF_DIRTY;
			pg->flags = (uint8_t)((f & ~PF_DIRTY) | set | ((f << 1) & zero) | PF_RESV);
			pg->kind = PK_CONT;
			pg->head_off = (uint32_t)(i - idx);
		}
		*undirtied = dirty_taken;
		return clean;
	}
	page_t *pg = P(idx);
	uint8_t f = pg->flags & keep_head;
	clean += ~f & PF_DIRTY;
	pg->flags = (uint8_t)(f | set | ((f << 1) & zero) | PF_DIRTY);
	pg->kind = PK_CONT;
	pg->head_off = 0;
	/* through a pointer of its own: the byte stores may alias G.pages, which the compiler would
	 * otherwise load again for every page */
	page_t *run = pg;
	for (uint32_t k = 1; k < n; k++) {
		f = run[k].flags & keep_rest;
		clean += ~f & PF_DIRTY;
		run[k].flags = (uint8_t)(f | set | ((f << 1) & zero) | PF_DIRTY);
		run[k].kind = PK_CONT;
		run[k].head_off = k;
	}
	*undirtied = 0;
	return clean;
}

/* n pages whose first is aligned to align bytes (a power of two; 0 or up to PAGE_SIZE: any). A
 * free run of n + align / PAGE_SIZE - 1 pages holds such a place; only the n pages are taken
 * (and counted against CONTIG_LIMIT), the pages before and after stay free as they were. */
page_t *region_alloc_aligned(size_t n, size_t align, uint8_t kind, int flags)
{
	page_t *h = NULL;
	size_t idx;
	size_t extra = align > PAGE_SIZE ? (align >> PAGE_SHIFT) - 1 : 0;
	limit_refused = 0;
	if (n == 0 || n > G.npages || extra >= G.npages - n) { errno = ENOMEM; return NULL; }
	range_lock();
	maybe_purge_locked();
	bool purged = false, merged = false;
refit:
	for (;;) {
		idx = find_fit(n + extra, kind);
		if (idx != SIZE_MAX) break;
		if (flags & RUN_SPARE) goto fail;
		if (range_grow(n + extra, add_usable) == 0) continue;
		/* the range is as large as it gets: a freed run and never-used pages side by side
		 * may hold the request together */
		if ((flags & RUN_CHUNK) || merged || !merge_sets_locked()) goto fail;
		merged = true;
	}
	h = P(idx);
	size_t len = h->npages;
	bool dirty = h->flags & PF_RUNDIRTY;
	uint32_t stamp = h->stamp;
	/* Small runs come from the end of the free run, everything else from its start: a freed
	 * large block's first page is then not at once a small run's, so a second free of it is
	 * still caught, and large blocks keep free pages after them to grow into. */
	size_t take = kind == PK_SMALL ? idx + len - n : idx;
	if (extra) take = (align_up(page_addr(idx), align) - G.base) >> PAGE_SHIFT;   /* idx <= take <= idx + extra */
	/* the pages that will count as newly committed: looked at before taking them only under a
	 * limit (one pass over their descriptors less for a big block, under the lock) */
	size_t clean = 0;
	if (R.limit && !(flags & RUN_RESERVE))
		for (size_t i = take; i < take + n; i++) clean += !(P(i)->flags & PF_DIRTY);
	if (R.limit && R.committed + clean > R.limit && (flags & (RUN_SPARE | RUN_CHUNK))) goto fail;
	if (R.limit && R.committed + clean > R.limit && !purged) {
		/* every free page is clean after this: fit again */
		if (!limit_make_room_locked(n)) goto fail;
		purged = true;
		goto refit;
	}
	bin_remove(idx);
	size_t lead = take - idx, tail = len - lead - n;    /* free pages before and after ours */
	size_t run0 = idx;
	idx = take;
	h = P(idx);
	size_t undirtied = 0;
	clean = take_pages_locked(idx, n, kind, flags, &undirtied);
	/* the rest stays free, with the state it had (its other neighbours are not free: no merge) */
	if (lead) {
		P(run0)->kind = PK_FREE;
		run_insert_free(run0, lead, dirty ? stamp : CLEAN_STAMP, dirty);
	}
	if (tail) {
		P(idx + n)->kind = PK_FREE;
		run_insert_free(idx + n, tail, dirty ? stamp : CLEAN_STAMP, dirty);
	}
	if (flags & RUN_RESERVE) R.committed -= undirtied;
	else R.committed += clean;
	if (R.committed > R.committed_peak) R.committed_peak = R.committed;
	range_open(idx, idx + n);
	if (flags & RUN_CHUNK) {
		/* n one-page runs, each a head with its own bitmap (see the last store below) */
		for (size_t i = 0; i < n; i++) {
			page_hot_t *bm = bitmap_get_locked();
			if (!bm) {
				while (i-- > 0) bitmap_put_locked(h[i].hot);
				goto undo;
			}
			memset(&h[i], 0, offsetof(page_t, kind));
			h[i].hot = bm;
			h[i].cls = 1;           /* a one-page class until a heap makes it its own (run_len) */
		}
		for (size_t i = 1; i < n; i++) __atomic_store_n(&h[i].kind, kind, __ATOMIC_RELEASE);
	} else if (kind == PK_SMALL) {
		page_hot_t *bm = bitmap_get_locked();
		if (!bm) goto undo;
		memset(h, 0, offsetof(page_t, kind));
		h->hot = bm;
	} else {
		h->npages = (uint32_t)n;
		h->head_off = 0;
		h->usable = n << PAGE_SHIFT;
		if (kind == PK_LARGE) {
			/* asked 0 until large_alloc sets it: the leak check takes such a block for one
			 * being made (its thread may be stopped before it has the block's address) */
			h->asked = 0;
			R.large_bytes += n << PAGE_SHIFT; R.large_blocks++; R.large_allocs++;
		}
	}
	if (kind == PK_MMAP) {
		huge_unadvise_locked(idx, idx + n);     /* a mapping gets the kernel's default */
		h->map_lo = 0;
		h->map_hi = n << PAGE_SHIFT;
		h->holes = NULL;
		R.mmap_bytes += n << PAGE_SHIFT;
	}
	/* Last: the leak check reads descriptors of threads it stopped, without this lock (one may
	 * be stopped right here). A head that says PK_SMALL before its live bitmap is in place sent
	 * it through a stale pointer: SIGSEGV in safety/leaks.sh, about 1 run in 80 under load. */
	__atomic_store_n(&h->kind, kind, __ATOMIC_RELEASE);
	range_unlock();
	if (flags & RUN_ZERO) {
		/* a fresh mapping reads as zero without the pages being touched; a block's resident
		 * pages are cleared in place (zero_dirty) */
		for (size_t i = idx; i < idx + n;) {
			if (!(P(i)->flags & PF_NEEDZERO)) { i++; continue; }
			size_t j = i;
			while (j < idx + n && (P(j)->flags & PF_NEEDZERO)) P(j++)->flags &= (uint8_t)~PF_NEEDZERO;
			if (kind == PK_MMAP) os_decommit(page_addr(i), (j - i) << PAGE_SHIFT);
			else zero_dirty(page_addr(i), (j - i) << PAGE_SHIFT);
			i = j;
		}
	}
	range_notify_collisions();
	return h;
undo:
	if (flags & RUN_CHUNK)
		for (size_t i = idx; i < idx + n; i++) P(i)->flags &= (uint8_t)~PF_HUGE;
	h->kind = PK_FREE;
	run_insert_free(idx, n, now_stamp(), true);
fail:
	range_unlock();
	range_notify_collisions();
	errno = ENOMEM;
	return NULL;
}

/* Dirty pages just joined the free runs: purge them at once under CONTIG_PURGE_MS=0, else what
 * is due. Whether the purger thread must be started, once the lock is dropped. */
static bool dirtied_locked(void)
{
	if (G.cfg.purge_ms == 0) purge_locked(true);
	else maybe_purge_locked();
	return purger_wanted_locked();
}

/* The caller changed protections or gave lasting advice (MADV_DONTFORK, ...) inside the pages
 * [idx, idx + n) of a block that goes back to the free runs: a fresh mapping of ours makes them
 * plain memory again, so that free runs never hold such a page. (A block's head carries PF_PROT
 * when any of its pages does: check_own marks both, and free looks at the head alone instead of
 * reading every page's descriptor.) */
static void prot_undo_locked(size_t idx, size_t n)
{
	os_map_over_rw(page_addr(idx), n << PAGE_SHIFT);
	for (size_t k = idx; k < idx + n; k++) P(k)->flags &= (uint8_t)~PF_PROT;
}

/* Whether the purger must be started once the lock is dropped. stamp: when its pages were
 * freed (coarse ms clock), which is when they become due for the purger. */
static bool free_locked(page_t *h, uint32_t stamp)
{
	size_t idx = page_idx(h), n = run_len(h);
	uint8_t was = h->kind;
	/* first, as region_alloc's last: the leak check must not follow live into a recycled bitmap */
	__atomic_store_n(&h->kind, PK_FREE, __ATOMIC_RELEASE);
	if (was == PK_SMALL) {
		h->capacity = 0;        /* only small heads have one (the free fast path's one test) */
		h->flags &= (uint8_t)~PF_WASHEAD;
		bitmap_put_locked(h->hot);
	}
	else if (was == PK_LARGE) {
		R.large_bytes -= n << PAGE_SHIFT; R.large_blocks--;
		h->flags |= PF_WASHEAD;
	}
	if (h->flags & PF_PROT) prot_undo_locked(idx, n);
	h->flags |= PF_DIRTY;
	run_insert_free(idx, n, stamp, true);
	release_top_locked(false);
	return dirtied_locked();
}
void region_free(page_t *h) { region_free_since(h, 0); }

void region_free_since(page_t *h, uint64_t since_ms)
{
	/* A large block's caller holds nothing but h now: asked 0 first, before anything else (the
	 * clock read too), so that a leak check that stops it here takes the block for one going
	 * away, not for a leak (free_slow has set it already, while it still held the pointer). */
	if (h->kind == PK_LARGE) __atomic_store_n(&h->asked, 0, __ATOMIC_RELAXED);
	range_lock();
	bool start = free_locked(h, since_ms ? (uint32_t)since_ms : now_stamp());
	range_unlock();
	if (start) purger_start();
}

/* Free pages from page nx on, up to need or more: the free runs side by side there (dirty and
 * clean runs do not merge, so there can be several). */
static size_t free_after(size_t nx, size_t need)
{
	size_t have = 0;
	while (have < need && nx + have < range_frontier() && P(nx + have)->kind == PK_FREE)
		have += P(nx + have)->npages;
	return have;
}

/* Resize a live PK_LARGE/PK_MMAP run in place: shrink gives the tail back; grow takes the free
 * run right after it (growing the range if it is at the top). With RUN_RESERVE (a PROT_NONE
 * reservation that grows PROT_NONE) the clean pages it takes are PF_RESV, not committed, and the
 * limit does not apply; dirty ones stay counted. 0 on success, -1 when it cannot. */
int region_resize(page_t *h, size_t newn, int flags)
{
	bool reserve = flags & RUN_RESERVE;
	size_t idx = page_idx(h), n = h->npages;
	int ret = -1;
	bool start = false;
	if (newn == n) return 0;
	range_lock();
	if (newn < n) {
		size_t tail = idx + newn;
		if (h->flags & PF_PROT) {
			/* the tail must not join the free runs with the caller's protection on it (the
			 * block's head says whether any of its pages has it; served mappings shrink
			 * through munmap, never here) */
			for (size_t i = tail; i < idx + n; i++)
				if (P(i)->flags & PF_PROT) { prot_undo_locked(tail, n - newn); break; }
		}
		h->npages = (uint32_t)newn;
		if (h->kind == PK_LARGE) R.large_bytes -= (n - newn) << PAGE_SHIFT;
		if (h->kind == PK_MMAP) R.mmap_bytes -= (n - newn) << PAGE_SHIFT;
		P(tail)->kind = PK_FREE;
		run_insert_free(tail, n - newn, now_stamp(), true);
		start = dirtied_locked();               /* the tail goes back as a freed block's would */
		ret = 0;
		goto out;
	}
	size_t need = newn - n, nx = idx + n;
	if (nx + need > G.npages) goto out;
	size_t have = free_after(nx, need);
	if (have < need && nx + have >= range_frontier()) {
		/* At the top: grow the range first (growth extends the clean free run at the top). */
		if (range_grow(need - have, add_usable) != 0) goto out;
		have = free_after(nx, need);
	}
	if (have < need) goto out;
	size_t clean = 0;
	if (!reserve)
		for (size_t i = nx; i < nx + need; i++) clean += !(P(i)->flags & PF_DIRTY);
	if (!reserve && R.limit && R.committed + clean > R.limit) {
		/* SPEC: what can be returned is, before a request fails at the limit. Purging leaves
		 * every run where it is, so the pages after us are still free and still ours to take. */
		purge_locked(true);
		clean = need;
		if (R.committed + clean > R.limit) goto out;   /* not a hit yet: realloc moves the block,
		                                                  and region_alloc counts it if that fails */
	}
	/* take the free runs after us up to need pages */
	for (size_t at = nx; at < nx + need;) {
		size_t flen = P(at)->npages;
		bool dirty = P(at)->flags & PF_RUNDIRTY;
		uint32_t stamp = P(at)->stamp;
		bin_remove(at);
		size_t end = at + flen, rest = 0;      /* pages of the run past what we need */
		if (end > nx + need) { rest = end - (nx + need); end = nx + need; }
		for (size_t i = at; i < end; i++) {
			P(i)->kind = PK_CONT;
			P(i)->head_off = (uint32_t)(i - idx);
			uint8_t fl = (uint8_t)(P(i)->flags & ~(PF_RUNDIRTY | PF_NEEDZERO | PF_RESV));
			P(i)->flags = reserve && !(fl & PF_DIRTY) ? (uint8_t)(fl | PF_RESV) : (uint8_t)(fl | PF_DIRTY);
		}
		if (rest) {
			/* the rest stays free; its head is rewritten, the pages before it are ours now */
			P(end)->kind = PK_FREE;
			P(end)->flags = (uint8_t)((P(end)->flags & ~PF_RUNDIRTY) | (dirty ? PF_RUNDIRTY : 0));
			run_insert_free(end, rest, dirty ? stamp : CLEAN_STAMP, dirty);
		}
		at = end;
	}
	R.committed += clean;
	if (R.committed > R.committed_peak) R.committed_peak = R.committed;
	range_open(nx, nx + need);
	h->npages = (uint32_t)newn;
	if (h->kind == PK_LARGE) R.large_bytes += need << PAGE_SHIFT;
	if (h->kind == PK_MMAP) R.mmap_bytes += need << PAGE_SHIFT;
	ret = 0;
out:
	range_unlock();
	if (start) purger_start();
	return ret;
}

void region_get_stats(region_stats_t *rs)
{
	range_lock();
	range_get_stats_locked(&rs->range);
	rs->committed = R.committed << PAGE_SHIFT;
	rs->committed_peak = R.committed_peak << PAGE_SHIFT;
	rs->purged = R.purged << PAGE_SHIFT;
	rs->limit = R.limit << PAGE_SHIFT;
	rs->limit_hits = R.limit_hits;
	rs->large_bytes = R.large_bytes;
	rs->large_blocks = R.large_blocks;
	rs->large_allocs = R.large_allocs;
	rs->mmap_bytes = R.mmap_bytes;
	rs->fallback_bytes = R.fallback_bytes;
	range_unlock();
}

void region_count_fallback(size_t bytes)
{
	range_lock();
	R.fallback_bytes += bytes;
	range_unlock();
}

/* The free run holding page i, or SIZE_MAX. Interior descriptors of free runs are not kept
 * exact, so this walks the bins: it serves only the rare MAP_FIXED calls into the range. */
size_t free_run_holding(size_t i)
{
	for (unsigned d = 0; d < 2; d++)
		for (unsigned b = 0; b < NBINS; b++)
			for (uint32_t k = R.bin[d][b]; k; k = P(k - 1)->next)
				if (i >= k - 1 && i < k - 1 + P(k - 1)->npages) return k - 1;
	return SIZE_MAX;
}

