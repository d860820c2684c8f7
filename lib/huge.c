/* huge.c - transparent huge pages for the small runs of big thread heaps.
 *
 * A working set of small blocks larger than the TLB's reach pays a page walk on almost every
 * access (under virtualisation a walk of two tables), and every 4 KiB page the heap grows into
 * costs a page fault (12-15 us each on the 2-core test machine: a 14 MiB working set spent a
 * quarter of its run faulting). One 2 MiB page is one fault and one TLB entry for what took 512.
 *
 * Asking for huge pages everywhere costs memory: the first touch of a 2 MiB chunk makes all of it
 * resident, so a program with a 100 KiB heap would weigh 2 MiB more, and a sparse calloc or a
 * sparse mapping the program asked for would be filled out. So only one thing gets them: once a
 * thread heap owns HUGE_MIN_RUNS small runs (2 MiB of them), its next one-page runs come from
 * the process's open chunk, 32 runs cut at once from an aligned place (runs.c, RUN_CHUNK,
 * region_alloc_run) and advised MADV_HUGEPAGE before anything touches it; big heaps take its runs
 * as they need them, so what a huge page can waste is the rest of one chunk per process. Every
 * page of an advised chunk carries PF_HUGE.
 *
 * The advice goes again as soon as part of the chunk is purged or handed to a mapping
 * (huge_unadvise_locked): left on, khugepaged would refill a chunk whose free runs the purger
 * gave back (it collapses a 2 MiB range with a single resident page in it), and a served mapping
 * must get the kernel's default, as any other mapping of the program does.
 *
 * Clearing a huge page is the kernel's work, done at the first touch, in the thread that makes
 * the touch: 2 MiB written in one fault, longer still in a virtual machine whose host has taken
 * the backing of free memory back (N1 in docs/benchmarks.md: 1-4 ms a chunk). A process that has
 * opened AHEAD_AFTER chunks grows its heap fast enough for that to show (jq: a tenth of its time
 * in those faults, all in its one thread), so from then on each chunk opened cuts the next one at
 * once and the purger thread faults it in (MADV_POPULATE_WRITE, which changes no byte), on
 * another CPU while the program runs; the next thread that needs a chunk takes that one, ready.
 * The next chunk is always that one, faulted in yet or not, so where blocks go never depends on
 * the purger's timing (SPEC, Determinism). The purger holds it alone while it works (R.filling,
 * fill_busy): a thread that needs it then, and malloc_trim, wait the rest of the fault out, so
 * nothing can take, purge or map over pages that are being faulted in. At most one chunk waits
 * ahead (2 MiB resident that no block uses yet, after the 64 MiB or more cut before it);
 * malloc_trim, contig_purge and the limit's purge give it back. Not under CONTIG_LIMIT (committed
 * pages ahead of need would count against it), nor where no purger runs (CONTIG_PURGE_MS=0, leak
 * checking).
 *
 * Honours the administrator: nothing is advised when transparent_hugepage/enabled says [never],
 * when the kernel has no THP, or when the process disabled THP (madvise says EINVAL). Under
 * [always] the kernel gives the whole range huge pages by itself; the chunks still keep a
 * thread's runs together. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include "region_int.h"
#include "os.h"

enum { HS_UNKNOWN, HS_ON, HS_OFF };
static _Atomic int huge_state = HS_UNKNOWN;

bool region_huge_ok(void)
{
	int s = atomic_load_explicit(&huge_state, memory_order_relaxed);
	if (s != HS_UNKNOWN) return s == HS_ON;
	s = HS_OFF;                             /* no file: a kernel without THP */
	int fd = os_open_read("/sys/kernel/mm/transparent_hugepage/enabled");
	if (fd >= 0) {
		char b[128];
		long n = os_read(fd, b, sizeof b - 1);
		os_close(fd);
		if (n > 0) {
			b[n] = 0;
			s = strstr(b, "[never]") ? HS_OFF : HS_ON;
		}
	}
	atomic_store_explicit(&huge_state, s, memory_order_relaxed);
	return s == HS_ON;
}

void region_huge_advise(uintptr_t chunk)
{
	int r = os_madvise((void *)chunk, HUGE_SIZE, MADV_HUGEPAGE);
	if (r == -EINVAL || r == -ENOSYS || r == -EPERM)
		atomic_store_explicit(&huge_state, HS_OFF, memory_order_relaxed);
}

void huge_unadvise_locked(size_t a, size_t b)
{
	/* chunks are aligned in the address space, so by page index they start where
	 * (index + phase) is a multiple of HUGE_PAGES */
	size_t phase = (size_t)(G.base >> PAGE_SHIFT) & (HUGE_PAGES - 1);
	for (size_t k = (a + phase) & ~(size_t)(HUGE_PAGES - 1); k < b + phase; k += HUGE_PAGES) {
		if (k < phase) continue;
		size_t c = k - phase;
		if (c + HUGE_PAGES > G.npages || !(P(c)->flags & PF_HUGE)) continue;
		for (size_t i = c; i < c + HUGE_PAGES; i++) P(i)->flags &= (uint8_t)~PF_HUGE;
		os_madvise((void *)page_addr(c), HUGE_SIZE, MADV_NOHUGEPAGE);
	}
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

bool huge_ahead_wanted_locked(void)
{
	return R.chunks_cut + 1 >= AHEAD_AFTER && !R.limit && !R.ahead && !R.filling && purger_may_run();
}

/* Fault in the chunk at chunk, writable, changing nothing in it: the kernel's populate where it
 * has one (Linux 5.14), else a locked or of zero into each OS page (no value changes, whoever
 * else might write there). Called by the purger, which holds the chunk alone meanwhile. Any
 * other refusal (no memory: the program's own touch will meet it, or not) leaves it as it is. */
void huge_fill(uintptr_t chunk)
{
	if (os_madvise((void *)chunk, HUGE_SIZE, MADV_POPULATE_WRITE) != -EINVAL) return;
	for (uintptr_t a = chunk; a < chunk + HUGE_SIZE; a += OS_PAGE)
		__atomic_fetch_or((unsigned char *)a, 0, __ATOMIC_RELAXED);
}
