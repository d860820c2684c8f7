/* internal.h - the core's shared definitions: constants, the page descriptor, the thread heap,
 * the global state, and the cross-module functions. Nothing here is exported. */
#ifndef CONTIG_INTERNAL_H
#define CONTIG_INTERNAL_H

#include "config.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>
#include "contig.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define HIDDEN      __attribute__((visibility("hidden")))
#define EXPORT      __attribute__((visibility("default")))
#define NOINLINE    __attribute__((noinline))
#define NORETURN    __attribute__((noreturn))

/* Debug tiers compile always (so they cannot rot) and are switched by --enable-debug. */
static const bool contig_debug = CONTIG_DEBUG;
#define CONTIG_ASSERT(c) do { if (contig_debug && unlikely(!(c))) \
	fatal_assert(__FILE__, __LINE__, #c); } while (0)

/* ---- geometry ---- */
#define PAGE_SHIFT   16                       /* allocator page: 64 KiB, the unit of the page map */
#define PAGE_SIZE    ((size_t)1 << PAGE_SHIFT)
#define OS_PAGE      4096u
#define GRANULE      PAGE_SIZE                /* CONTIG_BASE and CONTIG_SIZE are rounded to this */
#define ALIGN_MIN    16u                      /* every block is aligned at least this much */
#define NCLASS       49                       /* classes 1..48: 16 B .. 128 KiB; 0 is unused */
#define SMALL_MAX    ((size_t)128 << 10)      /* larger blocks are page runs */
#define ONEPAGE_MAX  ((size_t)16 << 10)       /* classes up to this live in one-page runs */
#define LIVE_BITS    4096u                    /* bits in a small page's live bitmap */
#define LIVE_BYTES   (LIVE_BITS / 8)
#define GROW_STEP    ((size_t)4 << 20)        /* the range is made usable at least this much at a time */

static inline uintptr_t align_up(uintptr_t x, uintptr_t a) { return (x + a - 1) & ~(a - 1); }
static inline uintptr_t align_down(uintptr_t x, uintptr_t a) { return x & ~(a - 1); }

/* ---- page descriptors: one per 64 KiB page of the range, found by (p - base) >> PAGE_SHIFT ---- */
enum page_kind {
	PK_UNUSED = 0,      /* beyond the frontier: never made usable */
	PK_FREE,            /* in a free run (only the head and tail descriptors are exact) */
	PK_SMALL,           /* head of a run of small blocks of one class */
	PK_LARGE,           /* head of a run holding one large block */
	PK_MMAP,            /* head of a run served to an anonymous mmap() */
	PK_CONT,            /* a later page of a live run: head_off leads to the head */
	PK_FOREIGN,         /* holds (part of) a mapping the library did not make */
	PK_MMAP_FIXED       /* taken by a caller's MAP_FIXED mapping over free pages */
};

#define USED_UNLISTED 0x80000000u   /* in page.used: full and off the list (one test on free) */
#define USED_MASK     0x7fffffffu

#define PF_DIRTY    0x01    /* may hold non-zero data or resident pages: counted as committed */
#define PF_NEEDZERO 0x02    /* handed out dirty to a caller that asked for zeroed memory */
#define PF_RUNDIRTY 0x04    /* PK_FREE heads: some page of the run is dirty */
#define PF_PROT     0x08    /* a caller changed the protection of part of this page */
#define PF_NONE     0x10    /* our mapping here is PROT_NONE (a served mapping was unmapped) */

typedef struct block { struct block *next; } block_t;
struct heap;

typedef struct page {
	union {
		struct {                        /* PK_SMALL heads: the fast paths touch only these */
			block_t *free;          /* blocks ready for malloc; the owner's frees go here too */
			uintptr_t start;        /* address of the run's first block */
			uint64_t *live;         /* out-of-band bitmap: bit set while the block starting in that granule is
			                           live; the cache line before it is the run's remote_t */
			uint64_t inv;           /* inverse of block_size's odd factor mod 2^64 (block_index) */
			struct heap *heap;      /* owner */
			uint32_t used;          /* live blocks, counting remote frees not yet collected;
			                           | USED_UNLISTED while the page is off its class list */
			uint32_t block_size;    /* bytes per block */
		};
		struct {                        /* every other kind */
			uint32_t npages;        /* run length in pages: heads (not PK_SMALL) and tails of free runs */
			uint32_t head_off;      /* pages back to the head: PK_CONT, tails of free runs */
			union {
				uint32_t stamp; /* PK_FREE heads: coarse ms clock when the oldest dirty part was freed */
				uint64_t asked; /* PK_LARGE: bytes the caller asked for */
				uint64_t map_lo;/* PK_MMAP: offset of the caller's first mapped byte from the run */
			};
			union {
				size_t usable;  /* PK_LARGE: usable bytes */
				size_t map_hi;  /* PK_MMAP: offset one past the caller's last mapped byte */
			};
			uint64_t *holes;        /* PK_MMAP: 4 KiB pages the caller unmapped inside
			                           [map_lo, map_hi), one bit each; NULL until the first hole */
		};
	};
	uint8_t kind;                   /* enum page_kind */
	uint8_t shift;                  /* log2 of bytes per live-bitmap bit (PK_SMALL; 4 in one-page runs) */
	uint8_t cls;                    /* size class (PK_SMALL) */
	uint8_t flags;                  /* PF_* of this 64 KiB page, kept across reuse */
	uint8_t rot;                    /* PK_SMALL: trailing zero bits of block_size (block_index) */
	uint8_t unused1;
	uint16_t capacity;              /* PK_SMALL: blocks carved into the free lists so far */
	uint32_t next, prev;            /* page index + 1 (0 = none): heap class list, free bin, delayed stack */
} page_t;

_Static_assert(sizeof(page_t) == 64, "page descriptor is one cache line");

/* What other threads write in a small run: a cache line of its own, just before the run's live
 * bitmap, so that their frees do not take the owner's descriptor line away from it. */
typedef struct remote {
	_Atomic(uintptr_t) thread_free; /* blocks other threads freed (lock-free stack) */
	struct page *delayed_next;      /* link on heap->delayed */
	_Atomic(uint8_t) qstate;        /* Q_* */
	uint8_t pad[47];
} remote_t;

/* remote_t.qstate. Other threads only ever move it from Q_WATCH to Q_QUEUED. */
enum {
	Q_QUIET = 0,                    /* nothing to tell the owner */
	Q_WATCH = 1,                    /* the page went full once: the first remote free queues it */
	Q_QUEUED = 2,                   /* on heap->delayed, until the owner drains it */
	Q_GONE = 3                      /* given back: no more queuing */
};

static inline remote_t *page_remote(const struct page *pg) { return (remote_t *)(void *)pg->live - 1; }

/* ---- thread heaps ---- */
#define HEAP_SPARES 4                 /* empty one-page runs a heap keeps instead of giving back */
typedef struct heap {
	/* owner only: the fast paths */
#define DIRECT_MAX 1024                   /* sizes up to this find their page in direct[] */
	page_t *direct[DIRECT_MAX / 16 + 1]; /* fast[] by (n + 15) / 16: one load less than the class */
	page_t *fast[NCLASS];           /* what the malloc fast path pops from: pages[] normally, always
	                                   &page_empty when every call must take the slow path */
	uint64_t n_malloc;              /* allocations this heap served */
	uint64_t n_free;                /* frees this thread made */
	uint64_t n_realloc;             /* realloc calls on this thread */
	page_t *pages[NCLASS];          /* first page of each class list; &page_empty when none */
	uint32_t last[NCLASS];          /* last page of each class list (index + 1; 0 when none) */
	page_t *spare[HEAP_SPARES];     /* empty one-page runs kept for the next class that needs one */
	int nspare;
	/* touched by other threads: kept off the owner's cache lines */
	_Alignas(64) _Atomic(page_t *) delayed; /* full pages that got a remote free */
	_Atomic(int) abandoned;         /* 1 while no thread owns it */
	pthread_mutex_t lock;           /* held by whoever acts for an abandoned heap */
	struct heap *next_all;          /* every heap ever made (never freed) */
	struct heap *next_abandoned;    /* the abandoned list */
} heap_t;

/* ---- configuration (config.c) ---- */
enum { MODE_RESERVE = CONTIG_MODE_RESERVE, MODE_LAZY = CONTIG_MODE_LAZY, MODE_AUTO = CONTIG_MODE_AUTO };
enum { COLL_SKIP = 0, COLL_ABORT = 1 };
enum { STATS_OFF = 0, STATS_TEXT = 1, STATS_JSON = 2 };
enum { LEAKS_OFF = 0, LEAKS_REPORT = 1, LEAKS_ERROR = 2 };
enum { MMAP_NONE = 0, MMAP_RW = 1, MMAP_ALL = 2 };
enum { LIMIT_NONE = 0, LIMIT_SIZE = 1, LIMIT_CGROUP = 2 };

typedef struct config {
	uintptr_t base;                 /* first address of the range */
	size_t size;                    /* bytes */
	int mode;                       /* MODE_* asked for */
	int on_collision;               /* COLL_* */
	int fallback_system;            /* 1: serve from outside the range when it cannot */
	int limit_kind;                 /* LIMIT_* */
	size_t limit;                   /* bytes (LIMIT_SIZE) */
	uint32_t purge_ms;              /* delay before freed pages go back to the OS */
	int mmap;                       /* MMAP_* */
	int stats;                      /* STATS_* */
	char stats_file[256];           /* CONTIG_STATS_FILE or "" */
	int leaks;                      /* LEAKS_* */
	int verbose;                    /* CONTIG_VERBOSE */
	int check_maps;                 /* CONTIG_CHECK_MAPS: read /proc/self/maps before using reserved pages */
} config_t;

HIDDEN void config_defaults(config_t *c);
HIDDEN void config_parse(config_t *c, char **envp);
HIDDEN int config_parse_size(const char *s, size_t *out);
HIDDEN int config_parse_addr(const char *s, uintptr_t *out);

/* ---- global state ---- */
typedef struct contig_global {
	uintptr_t base;                 /* the range, fixed after init */
	size_t size;
	page_t *pages;                  /* descriptor array, one per page of the range */
	size_t npages;                  /* pages in the range */
	config_t cfg;
	_Atomic(int) state;             /* 0 uninit, 1 initialising, 2 ready */
	int slow_only;                  /* leak tracking: every small malloc records its size */
} contig_global_t;

extern HIDDEN contig_global_t G;

static inline bool range_has(const void *p) { return (uintptr_t)p - G.base < G.size; }
static inline size_t page_index(const void *p) { return ((uintptr_t)p - G.base) >> PAGE_SHIFT; }
static inline page_t *page_of(const void *p) { return &G.pages[page_index(p)]; }
static inline uintptr_t page_addr(size_t idx) { return G.base + (idx << PAGE_SHIFT); }
static inline size_t page_idx(const page_t *pg) { return (size_t)(pg - G.pages); }

HIDDEN void contig_init_slow(void);
static inline void contig_ensure_init(void)
{
	if (unlikely(atomic_load_explicit(&G.state, memory_order_acquire) != 2))
		contig_init_slow();
}

/* ---- fatal path and allocation-free formatting (fmt.c) ---- */
HIDDEN NORETURN void fatal_pointer(const char *func, const void *p);
HIDDEN NORETURN void fatal_msg(const char *func, const char *msg);
HIDDEN NORETURN void fatal_corrupt(const char *func, const void *p);   /* "heap corruption at p" */
HIDDEN NORETURN void fatal_assert(const char *file, int line, const char *cond);
typedef struct fmtbuf { char *p; size_t left; char *start; } fmtbuf_t;
HIDDEN void fmt_init(fmtbuf_t *b, char *buf, size_t n);
HIDDEN void fmt_str(fmtbuf_t *b, const char *s);
HIDDEN void fmt_char(fmtbuf_t *b, char c);
HIDDEN void fmt_dec(fmtbuf_t *b, uint64_t v);
HIDDEN void fmt_hex(fmtbuf_t *b, uint64_t v);
HIDDEN void fmt_size(fmtbuf_t *b, uint64_t bytes);
HIDDEN size_t fmt_len(const fmtbuf_t *b);
HIDDEN void log_line(const char *line);      /* "libcontig: " + line + "\n" to stderr */
HIDDEN void log_verbose(const char *line);   /* the same under CONTIG_VERBOSE */

/* ---- size classes (heap.c) ---- */
extern HIDDEN const uint32_t class_size[NCLASS];
extern HIDDEN const uint8_t class_pages[NCLASS];
extern HIDDEN const uint8_t class_lut[1025];
static inline unsigned size_class(size_t n)
{
	if (likely(n <= ONEPAGE_MAX))
		return class_lut[(n + 15) >> 4];
	unsigned k = 63u - (unsigned)__builtin_clzl(n - 1);        /* 2^k < n <= 2^(k+1) */
	return 8u + (k - 7u) * 4u + (unsigned)((n - 1) >> (k - 2)) - 4u + 1u;
}

/* ---- page runs and the range (region.c) ---- */
enum { RUN_ZERO = 1 };             /* caller needs the memory zeroed (PK_MMAP: decommitted instead) */
HIDDEN int region_init(void);
HIDDEN page_t *region_alloc(size_t npages, uint8_t kind, int flags);
HIDDEN void region_free(page_t *head);
HIDDEN int region_resize(page_t *head, size_t newpages);
HIDDEN page_t *region_trim(page_t *head, size_t lead, size_t keep);
HIDDEN void region_set_limit_pages(size_t pages);
/* served mappings (mmap.c) */
enum { PC_FREE, PC_UNUSED, PC_HEAP, PC_MMAP, PC_FIXED, PC_FOREIGN };
HIDDEN int region_classify(size_t i, page_t **head);
HIDDEN void region_mmap_release(page_t *h, size_t a, size_t b);
HIDDEN int region_fixed_take(size_t a, size_t b);
HIDDEN void region_fixed_give_back(size_t i);
HIDDEN void region_count_fallback(size_t bytes);
HIDDEN size_t region_frontier(void);
HIDDEN size_t region_purge(bool all);
HIDDEN void region_maybe_purge(void);
HIDDEN void region_lock(void);
HIDDEN void region_unlock(void);
HIDDEN void region_fork_child(void);
HIDDEN uint64_t *region_bitmap_get(void);
HIDDEN void region_bitmap_put(uint64_t *bm);
HIDDEN void *meta_alloc(size_t bytes);         /* zeroed, never freed, outside the range */

typedef struct region_stats {
	size_t reserved, mapped, committed, committed_peak, purged, limit, limit_hits;
	size_t large_bytes, large_blocks, mmap_bytes, fallback_bytes;
	size_t collisions;
	contig_collision_t coll[CONTIG_STATS_COLLISIONS];
	int mode;
} region_stats_t;
HIDDEN void region_get_stats(region_stats_t *rs);
HIDDEN void region_count_collision(uintptr_t addr, size_t len, contig_route_t route);

/* ---- thread heaps and small blocks (heap.c) ---- */
HIDDEN heap_t *heap_get(void);
HIDDEN void *heap_alloc_small(size_t n);
HIDDEN void *heap_alloc_class(unsigned cls);
HIDDEN void heap_free_small(page_t *pg, void *p, const char *func);
HIDDEN void heap_fork_prepare(void);
HIDDEN void heap_fork_parent(void);
HIDDEN void heap_fork_child(void);
HIDDEN void heap_collect_all(void);
HIDDEN void heap_count_calls(uint64_t *m, uint64_t *f, uint64_t *r);
HIDDEN void heap_init_key(void);
HIDDEN void heap_flush_remote(void);
HIDDEN void heap_set_asked(page_t *pg, const void *p, size_t n);
HIDDEN size_t heap_asked(const page_t *pg, const void *p);
extern HIDDEN __thread heap_t *heap_tls __attribute__((tls_model("initial-exec")));
extern HIDDEN heap_t heap_none;
extern HIDDEN __thread int heap_locks_held __attribute__((tls_model("initial-exec")));

/* ---- entry points (alloc.c) ---- */
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

/* ---- mapping calls served from the range (mmap.c) ---- */
HIDDEN void *mm_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
HIDDEN int mm_munmap(void *addr, size_t len);
HIDDEN void *mm_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *newaddr);
HIDDEN int mm_mprotect(void *addr, size_t len, int prot);
HIDDEN int mm_madvise(void *addr, size_t len, int advice);
HIDDEN uint64_t mm_calls(void);

/* ---- the memory cgroup (cgroup.c) ---- */
HIDDEN size_t cgroup_memory_limit(char *where, size_t wn);

/* ---- statistics and reports (stats.c) ---- */
HIDDEN void stats_collect(contig_stats_t *st);
HIDDEN void stats_report_exit(void);
HIDDEN void stats_print_malloc_stats(void);

/* ---- OS layer (os.c): the only place that issues mmap/munmap/mprotect/madvise ---- */
#include "os.h"

#endif
