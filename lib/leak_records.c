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
