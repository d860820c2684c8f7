/* preload.c - the interposition layer: libc's malloc-family names, forwarded to the core.
 * Nothing else lives here; the exported set is fixed by libcontig.sym. */
#include "config.h"
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include "alloc.h"
#include "mmap.h"
#include "stats.h"

#define PUBLIC __attribute__((visibility("default")))

PUBLIC void *malloc(size_t n) { return alloc_malloc_inline(n); }
PUBLIC void free(void *p) { alloc_free_inline(p); }
PUBLIC void *calloc(size_t n, size_t m) { return alloc_calloc_inline(n, m); }
PUBLIC void *realloc(void *p, size_t n) { return alloc_realloc_inline(p, n); }
PUBLIC void *reallocarray(void *p, size_t n, size_t m) { return alloc_reallocarray(p, n, m); }
PUBLIC void cfree(void *p);
PUBLIC void cfree(void *p) { alloc_free(p); }
PUBLIC void *memalign(size_t a, size_t n) { return alloc_memalign_inline(a, n); }
PUBLIC int posix_memalign(void **out, size_t a, size_t n)
{
	void *p = a >= sizeof(void *) ? alloc_memalign_fast(a, n) : NULL;
	if (likely(p != NULL)) {
		*out = p;
		return 0;
	}
	return alloc_posix_memalign(out, a, n);
}
PUBLIC void *aligned_alloc(size_t a, size_t n)
{
	void *p = a ? alloc_memalign_fast(a, n) : NULL;
	return likely(p != NULL) ? p : alloc_aligned_alloc(a, n);
}
PUBLIC void *valloc(size_t n) { return alloc_valloc(n); }
PUBLIC void *pvalloc(size_t n) { return alloc_pvalloc(n); }
PUBLIC size_t malloc_usable_size(void *p) { return alloc_usable_size_inline(p); }
PUBLIC void free_sized(void *p, size_t n);
PUBLIC void free_sized(void *p, size_t n) { alloc_free_sized(p, n); }
PUBLIC void free_aligned_sized(void *p, size_t a, size_t n);
PUBLIC void free_aligned_sized(void *p, size_t a, size_t n) { alloc_free_aligned_sized(p, a, n); }
PUBLIC int malloc_trim(size_t pad) { return alloc_trim(pad); }
PUBLIC int mallopt(int param, int value) { (void)param; (void)value; return 1; }
PUBLIC void malloc_stats(void) { stats_print_malloc_stats(); }

PUBLIC struct mallinfo2 mallinfo2(void)
{
	struct mallinfo2 mi;
	contig_stats_t st;
	memset(&mi, 0, sizeof mi);
	st.size = sizeof st;
	if (contig_get_stats(&st) == 0) {
		mi.arena = st.committed;
		mi.uordblks = st.live_bytes;
		mi.fordblks = st.committed > st.live_bytes ? st.committed - st.live_bytes : 0;
		mi.hblkhd = st.mmap_bytes;
		mi.usmblks = st.committed_peak;
		mi.keepcost = 0;
	}
	return mi;
}

PUBLIC struct mallinfo mallinfo(void)
{
	struct mallinfo2 m2 = mallinfo2();
	struct mallinfo mi;
	memset(&mi, 0, sizeof mi);
	/* The old struct has int fields: saturate rather than wrap. */
#define SAT(x) ((x) > 0x7fffffff ? 0x7fffffff : (int)(x))
	mi.arena = SAT(m2.arena);
	mi.uordblks = SAT(m2.uordblks);
	mi.fordblks = SAT(m2.fordblks);
	mi.hblkhd = SAT(m2.hblkhd);
	mi.usmblks = SAT(m2.usmblks);
#undef SAT
	return mi;
}

/* glibc's internal entry points, which some programs and libraries call directly. */
PUBLIC void *__libc_malloc(size_t n);
PUBLIC void *__libc_malloc(size_t n) { return alloc_malloc(n); }
PUBLIC void *__libc_calloc(size_t n, size_t m);
PUBLIC void *__libc_calloc(size_t n, size_t m) { return alloc_calloc(n, m); }
PUBLIC void *__libc_realloc(void *p, size_t n);
PUBLIC void *__libc_realloc(void *p, size_t n) { return alloc_realloc(p, n); }
PUBLIC void __libc_free(void *p);
PUBLIC void __libc_free(void *p) { alloc_free(p); }
PUBLIC void *__libc_memalign(size_t a, size_t n);
PUBLIC void *__libc_memalign(size_t a, size_t n) { return alloc_memalign(a, n); }
PUBLIC void *__libc_valloc(size_t n);
PUBLIC void *__libc_valloc(size_t n) { return alloc_valloc(n); }
PUBLIC void *__libc_pvalloc(size_t n);
PUBLIC void *__libc_pvalloc(size_t n) { return alloc_pvalloc(n); }
PUBLIC int __posix_memalign(void **out, size_t a, size_t n);
PUBLIC int __posix_memalign(void **out, size_t a, size_t n) { return alloc_posix_memalign(out, a, n); }

/* The mapping calls: private anonymous mmap is served from the range, the rest is checked. */
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/shm.h>

PUBLIC void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mm_mmap(addr, len, prot, flags, fd, off);
}
PUBLIC void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
PUBLIC void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mm_mmap(addr, len, prot, flags, fd, off);
}
PUBLIC int munmap(void *addr, size_t len) { return mm_munmap(addr, len); }
PUBLIC int mprotect(void *addr, size_t len, int prot) { return mm_mprotect(addr, len, prot); }
PUBLIC int madvise(void *addr, size_t len, int advice) { return mm_madvise(addr, len, advice); }
PUBLIC int pkey_mprotect(void *addr, size_t len, int prot, int pkey) { return mm_pkey_mprotect(addr, len, prot, pkey); }
PUBLIC void *shmat(int id, const void *addr, int flg) { return mm_shmat(id, addr, flg); }
PUBLIC int shmdt(const void *addr) { return mm_shmdt(addr); }
PUBLIC void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
	void *newaddr = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		newaddr = va_arg(ap, void *);
		va_end(ap);
	}
	return mm_mremap(old, oldlen, newlen, flags, newaddr);
}
