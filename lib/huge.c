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
