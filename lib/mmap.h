/* mmap.h - the mapping calls (mmap.c): private anonymous mmap served from the range, and every
 * call that could place, change or remove a mapping inside it checked against the page owners. */
#ifndef CONTIG_MMAP_H
#define CONTIG_MMAP_H

#include "common.h"

HIDDEN void *mm_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
HIDDEN int mm_munmap(void *addr, size_t len);
HIDDEN void *mm_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *newaddr);
HIDDEN int mm_mprotect(void *addr, size_t len, int prot);
HIDDEN int mm_madvise(void *addr, size_t len, int advice);
HIDDEN int mm_pkey_mprotect(void *addr, size_t len, int prot, int pkey);
HIDDEN void *mm_shmat(int id, const void *addr, int flg);
HIDDEN int mm_shmdt(const void *addr);
HIDDEN uint64_t mm_calls(void);

#endif
