/* leak_records.c - what leak checking records as blocks are handed out (CONTIG_LEAKS only): the
 * allocation stack of every block, in a directory with one entry per page of the range and a
 * table per small run. Called from the allocation slow paths; the scan (leak.c) reads it. */
#include "leak_records.h"
#include "range.h"
#include "stack.h"
#include <string.h>

static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;

_Atomic(leak_dir_t *) leak_dir_ptr;     /* G.npages entries, made on the first record */

/* The child of a fork: a thread caught making the directory is gone (the child makes it again). */
void leak_records_fork_child(void) { pthread_mutex_init(&dir_lock, NULL); }

leak_dir_t *leak_dir_make(void)
{
	leak_dir_t *d = atomic_load_explicit(&leak_dir_ptr, memory_order_acquire);
	if (likely(d != NULL) || !G.npages) return d;
	pthread_mutex_lock(&dir_lock);
	d = atomic_load(&leak_dir_ptr);
	if (!d) {
		d = meta_alloc(G.npages * sizeof(leak_dir_t));      /* zeroed, touched only where the heap is */
		atomic_store_explicit(&leak_dir_ptr, d, memory_order_release);
	}
	pthread_mutex_unlock(&dir_lock);
	return d;
}


/* Where the stack id of block p (of run h, head of a PK_LARGE or PK_SMALL run) is kept, or NULL;
 * create: make the run's table of records when it has none yet. */
static uint32_t *record_of(leak_dir_t *d, page_t *h, const void *p, bool create)
{
	size_t hi = page_idx(h);
	if (h->kind == PK_LARGE) return &d[hi].large_stack;
	if (h->kind != PK_SMALL) return NULL;
	leak_small_t *t = atomic_load_explicit(&d[hi].small, memory_order_acquire);
	if (!t) {
		if (!create) return NULL;
		leak_small_t *mine = meta_alloc(sizeof *mine);
		if (!mine) return NULL;
		if (atomic_compare_exchange_strong(&d[hi].small, &t, mine)) t = mine;
	}
	return &t->stack[block_index(h, p)];
}

/* Record the caller's stack for p; in_place (a block realloc kept, was its asked bytes until now):
 * the LEAK_USABLE mark stays (what the program wrote past its asked bytes is still its own), and an
 * unmarked block zeroes the bytes it grows into (what is there was left by an earlier block). */
static void note(void *p, bool in_place, size_t was, size_t asked)
{
	if (!range_has(p)) return;                          /* CONTIG_FALLBACK blocks are not tracked */
	uint32_t id = stack_capture();
	leak_dir_t *d = leak_dir_make();
	if (!d) return;
	uint32_t *rec = record_of(d, leak_head_of(page_of(p)), p, true);
	if (!rec) return;
	uint32_t usable = in_place ? *rec & LEAK_USABLE : 0;
	if (in_place && !usable && asked > was) memset((char *)p + was, 0, asked - was);
	*rec = id | usable;
}

void leak_note_alloc(void *p, size_t asked) { note(p, false, 0, asked); }
void leak_note_realloc(void *p, size_t was, size_t asked) { note(p, true, was, asked); }

void leak_note_new(void *p, size_t asked)
{
	/* the whole block: realloc copies its usable bytes when it moves it */
	const page_t *h = leak_head_of(page_of(p));
	memset(p, 0, h->kind == PK_SMALL && h->block_size > asked ? h->block_size : asked);
	leak_note_alloc(p, asked);
}

void leak_note_usable(void *p, size_t asked, size_t usable)
{
	leak_dir_t *d = leak_dir();
	if (!d || !range_has(p)) return;
	uint32_t *rec = record_of(d, leak_head_of(page_of(p)), p, false);
	if (!rec || (*rec & LEAK_USABLE)) return;   /* asked before: what is there now is the program's */
	if (usable > asked) memset((char *)p + asked, 0, usable - asked);
	*rec |= LEAK_USABLE;
}

/* Clear the stack the allocation that is returning used, from just below this function's stack
 * pointer down to the deepest point its capture reached. A stale copy of a block's address in
 * there, where the program's next frames (or the exit path's, up to the check at exit) leave a
 * slot unwritten, kept a lost block reachable: `p = malloc(300000); p = 0;` or `strdup` in main
 * went unreported where LeakSanitizer reports them. On x86-64 the stores are one `rep stosq`
 * from the stack pointer down, so that nothing of this function's own is below it (its red zone
 * stays unused); elsewhere SCRUB_GAP bytes below a local are left. Only a depth this thread's
 * own capture reached is cleared, and only within SCRUB_MAX: a capture made on another stack (a
 * coroutine's) is never cleared from this one. */
#define SCRUB_GAP 256u
#define SCRUB_MAX ((uintptr_t)64 << 10)
NOINLINE void *leak_scrubbed(void *p)
{
	uintptr_t low = (stack_capture_low() + 7) & ~(uintptr_t)7, top;
#if defined(__x86_64__)
	__asm__ volatile("mov %%rsp, %0" : "=r"(top));
	top &= ~(uintptr_t)7;
	if (low && low < top && top - low <= SCRUB_MAX) {
		size_t words = (top - low) / 8;
		void *d = (void *)low;
		__asm__ volatile("rep stosq" : "+D"(d), "+c"(words) : "a"((uintptr_t)0) : "memory");
	}
#else
	volatile uintptr_t here = 0;
	top = ((uintptr_t)&here - SCRUB_GAP) & ~(uintptr_t)7;
	if (low && low < top && top - low <= SCRUB_MAX)
		for (volatile uintptr_t *w = (volatile uintptr_t *)low; (uintptr_t)w < top; w++) *w = 0;
#endif
	return p;
}
