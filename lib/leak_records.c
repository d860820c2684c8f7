/* leak_records.c - what leak checking records as blocks are handed out (CONTIG_LEAKS only): the
 * allocation stack of every block, in a directory with one entry per page of the range and a
 * table per small run. Called from the allocation slow paths; the scan (leak.c) reads it. */
#include "leak_records.h"
#include "range.h"
#include "stack.h"
#include <string.h>

static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;

_Atomic(leak_dir_t *) leak_dir_ptr;     /* G.npages entries, made on the first record */
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


/* Record the caller's stack for p; in_place (a block realloc kept, was its asked bytes until now):
 * the LEAK_USABLE mark stays (what the program wrote past its asked bytes is still its own), and an
 * unmarked block zeroes the bytes it grows into (what is there was left by an earlier block). */
static void note(void *p, bool in_place, size_t was, size_t asked)
{
	if (!range_has(p)) return;                          /* CONTIG_FALLBACK blocks are not tracked */
	uint32_t id = stack_capture();
	leak_dir_t *d = leak_dir_make();
	if (!d) return;
	page_t *h = leak_head_of(page_of(p));
	size_t hi = page_idx(h);
	uint32_t *rec;
	if (h->kind == PK_LARGE) {
		rec = &d[hi].large_stack;
	} else if (h->kind == PK_SMALL) {
		leak_small_t *t = atomic_load_explicit(&d[hi].small, memory_order_acquire);
		if (!t) {
			leak_small_t *mine = meta_alloc(sizeof *mine);
			if (!mine) return;
			t = NULL;
			if (atomic_compare_exchange_strong(&d[hi].small, &t, mine)) t = mine;
		}
		rec = &t->stack[block_index(h, (uintptr_t)p - h->start)];
	} else {
		return;
	}
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
	page_t *h = leak_head_of(page_of(p));
	uint32_t *rec;
	if (h->kind == PK_LARGE) {
		rec = &d[page_idx(h)].large_stack;
	} else if (h->kind == PK_SMALL) {
		leak_small_t *t = atomic_load_explicit(&d[page_idx(h)].small, memory_order_acquire);
		if (!t) return;
		rec = &t->stack[block_index(h, (uintptr_t)p - h->start)];
	} else {
		return;
	}
	if (*rec & LEAK_USABLE) return;             /* asked before: what is there now is the program's */
	if (usable > asked) memset((char *)p + asked, 0, usable - asked);
	*rec |= LEAK_USABLE;
}
