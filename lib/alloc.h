/* alloc.h - the malloc family on top of the heaps and the page runs (alloc.c): what preload/
 * forwards the libc entry points to. */
#ifndef CONTIG_ALLOC_H
#define CONTIG_ALLOC_H

#include "common.h"

HIDDEN void *alloc_malloc(size_t n);
HIDDEN void *alloc_new(size_t n, void *(*on_fail)(size_t));   /* malloc; NULL becomes on_fail(n) */
HIDDEN void *alloc_calloc(size_t n, size_t m);
HIDDEN void *alloc_realloc(void *p, size_t n);
HIDDEN void *alloc_reallocarray(void *p, size_t n, size_t m);
HIDDEN void alloc_free(void *p);
HIDDEN void alloc_free_sized(void *p, size_t n);
HIDDEN void alloc_delete_sized(void *p, size_t n);      /* C++ sized delete */
HIDDEN void alloc_free_aligned_sized(void *p, size_t align, size_t n);
HIDDEN void *alloc_memalign(size_t align, size_t n);
HIDDEN int alloc_posix_memalign(void **out, size_t align, size_t n);
HIDDEN void *alloc_aligned_alloc(size_t align, size_t n);
HIDDEN void *alloc_valloc(size_t n);
HIDDEN void *alloc_pvalloc(size_t n);
HIDDEN size_t alloc_usable_size(const void *p);
HIDDEN int alloc_trim(size_t pad);

#endif
