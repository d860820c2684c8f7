/* contig.h - public API of libcontig, the contiguous-heap allocator.
 * Link with -lcontig (pkg-config contig) or preload libcontig.so; both export the same API. */
#ifndef CONTIG_H
#define CONTIG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CONTIG_VERSION_STRING "0.1.0"

/* Where found: how a collision with a foreign mapping was detected. */
typedef enum contig_route {
	CONTIG_ROUTE_START = 1,   /* already mapped when the range was reserved */
	CONTIG_ROUTE_GROW = 2,    /* found while growing lazily (MAP_FIXED_NOREPLACE refused) */
	CONTIG_ROUTE_MMAP = 3,    /* an interposed mmap/mremap/munmap/mprotect/madvise call */
	CONTIG_ROUTE_MAPS = 4     /* found by reading /proc/self/maps (raw system calls) */
} contig_route_t;

typedef struct contig_collision {
	uintptr_t addr;           /* first byte of the foreign pages inside the range */
	size_t len;               /* bytes */
	contig_route_t route;     /* how it was found */
} contig_collision_t;

/* Mode actually in force. */
typedef enum contig_mode {
	CONTIG_MODE_RESERVE = 1,
	CONTIG_MODE_LAZY = 2,
	CONTIG_MODE_AUTO = 3
} contig_mode_t;

#define CONTIG_STATS_COLLISIONS 16   /* collisions whose addresses are kept */

/* Statistics. Set .size = sizeof(contig_stats_t) before calling contig_get_stats(),
 * so that a program built against an older, smaller struct keeps working (at least up to
 * limit_hits: offsetof(contig_stats_t, calls_malloc); only whole fields are filled). */
typedef struct contig_stats {
	size_t size;                  /* in: sizeof(contig_stats_t) of the caller */
	uintptr_t base;               /* first address of the range */
	size_t range_size;            /* bytes in the range */
	int mode;                     /* contig_mode_t chosen at start */
	int auto_reserved_all;        /* 1 when auto reserved the whole range */
	size_t reserved;              /* bytes of the range reserved PROT_NONE at start */
	size_t mapped;                /* bytes of the range the library has mapped so far (frontier) */
	size_t committed;             /* bytes usable and not returned to the OS */
	size_t committed_peak;        /* high-water mark of committed, bytes */
	size_t resident_peak;         /* peak resident set of the process (VmHWM), bytes */
	size_t live_bytes;            /* usable bytes of live heap blocks */
	size_t live_blocks;           /* live heap blocks */
	size_t mmap_bytes;            /* bytes of anonymous mappings served from the range */
	size_t purged_bytes;          /* bytes returned to the OS so far */
	size_t fallback_bytes;        /* bytes served outside the range (CONTIG_FALLBACK=system) */
	size_t limit;                 /* CONTIG_LIMIT in bytes, 0 for none */
	size_t limit_hits;            /* requests refused at the limit */
	uint64_t calls_malloc;        /* malloc-family allocations served (incl. calloc, memalign...) */
	uint64_t calls_free;          /* frees of live blocks */
	uint64_t calls_realloc;       /* realloc calls */
	uint64_t calls_mmap;          /* mmap calls served from the range */
	size_t collisions;            /* collisions found so far */
	contig_collision_t collision[CONTIG_STATS_COLLISIONS]; /* the first ones */
	size_t resident;              /* resident set of the process now (VmRSS), bytes */
} contig_stats_t;

/* Nonzero when p lies inside the range: one subtraction and one compare. */
int contig_owns(const void *p);
/* The range: first address and length in bytes. */
void *contig_base(void);
size_t contig_size(void);
/* Fill *st (st->size set by the caller); 0 on success, -1 with errno EINVAL. */
int contig_get_stats(contig_stats_t *st);
/* Return every free page to the OS now; returns the bytes purged. */
size_t contig_purge(void);
/* Called (from the thread that found it, with no library lock held) for each new collision. */
typedef void (*contig_collision_fn)(const contig_collision_t *c, void *arg);
void contig_set_collision_callback(contig_collision_fn fn, void *arg);
/* Leak check now, as at exit under CONTIG_LEAKS (the report goes to stderr; the process never
 * exits from here): stores the bytes the callers asked for and the number of leaked allocations,
 * after suppressions, in *bytes and *blocks (either may be NULL) and returns 0. Every call reports
 * every leak found then, including ones an earlier call reported. Without CONTIG_LEAKS set no
 * allocation stacks are kept: returns -1 with errno ENOTSUP and both counts 0. When the check had
 * to be skipped (a thread it could not stop ran during it, /proc could not be read; a line on
 * stderr says which): -1 with errno EAGAIN, both counts 0. */
int contig_leak_check(size_t *bytes, size_t *blocks);
/* "0.1.0" */
const char *contig_version(void);

#ifdef __cplusplus
}
#endif
#endif /* CONTIG_H */
