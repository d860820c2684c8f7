/* common.h - what every layer of the core shares: the build macros, the geometry, the page
 * descriptor and the global state. Module interfaces live in their own headers (see docs/design.md). */
#ifndef CONTIG_COMMON_H
#define CONTIG_COMMON_H

#include "config.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>
#include "contig.h"
#include "conf.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define HIDDEN      __attribute__((visibility("hidden")))
#define EXPORT      __attribute__((visibility("default")))
#define NOINLINE    __attribute__((noinline))
#define ALWAYS_INLINE inline __attribute__((always_inline))
#define NORETURN    __attribute__((noreturn))

/* Debug tiers compile always (so they cannot rot) and are switched by --enable-debug. */
static const bool contig_debug = CONTIG_DEBUG;
HIDDEN NORETURN void fatal_assert(const char *file, int line, const char *cond);   /* fmt.c */
#define CONTIG_ASSERT(c) do { if (contig_debug && unlikely(!(c))) \
	fatal_assert(__FILE__, __LINE__, #c); } while (0)

/* ---- geometry ---- */
#define PAGE_SHIFT   16                       /* allocator page: 64 KiB, the unit of the page map */
#define PAGE_SIZE    ((size_t)1 << PAGE_SHIFT)
#define OS_PAGE      4096u
#define GRANULE      PAGE_SIZE                /* CONTIG_BASE and CONTIG_SIZE are rounded to this */
#define ALIGN_MIN    16u                      /* every block is aligned at least this much */
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
#define USED_HEAD     0x40000000u   /* in page.used: first of its class list, the page malloc
                                       serves from: its count never drops to 0 or below, so a
                                       malloc/free loop that empties it on every free stays on
                                       free's fast path (one test on free) */
#define USED_MASK     0x3fffffffu

#define ASKED_CACHED UINT64_MAX  /* a PK_LARGE head's asked: freed, in a thread's cache (large_cache.c) */

#define PF_DIRTY    0x01    /* may hold non-zero data or resident pages: counted as committed */
#define PF_NEEDZERO 0x02    /* handed out dirty to a caller that asked for zeroed memory */
#define PF_RUNDIRTY 0x04    /* PK_FREE heads: a recycled run (freed since the range grew; its dirty
                               pages purged or not), not a fresh one: its set in the bins */
#define PF_PROT     0x08    /* a caller changed the protection of part of this page, or gave it lasting advice */
#define PF_NONE     0x10    /* our mapping here is PROT_NONE (a served mapping was unmapped) */
#define PF_WASHEAD  0x20    /* the first page of a freed large block, until a run other than a small
                               one's head takes it: a small run made here never hands out its block
                               0, whose address is that large block's (a second free of it must
                               still be caught, not free someone else's block) */
#define PF_HUGE     0x40    /* in a 2 MiB chunk advised MADV_HUGEPAGE for a heap's small runs, until
                               part of it is purged or served to a mapping (huge.c) */
#define PF_RESV     0x80    /* a served PROT_NONE reservation's page (CONTIG_MMAP=all) that nothing
                               has made accessible yet: address space, not committed (mmap_pages.c) */

typedef struct block {
	uint64_t next;          /* index in its run of the next block on the same free list; FREE_END
	                           after the last */
	uintptr_t tag;          /* FREE_TAG while it waits on its owner's free list (carved,
	                           freed by the owner, or collected); remote_tag(block) while another
	                           thread's free of it waits for the owner to collect it
	                           (heap_free_remote); 0 when malloc hands it out */
} block_t;

/* What a freeing thread that does not own a block writes into its second word: the owner's free
 * on a PAGE_REMOTE run reads it from the line it is writing anyway, and only when it matches looks
 * at the freed bitmap other threads write. The key is drawn at start (G.tag_key): a program cannot
 * forge a tag with a use-after-free write it computes. Not a canonical address nor a small
 * number: a program's own data matches it only by a rare accident, which costs one look at the
 * bitmap, never a wrong answer. */
#define remote_tag(b) ((uintptr_t)(b) ^ G.tag_key)
/* What every block on an owner's free list carries in its second word: a hint for other threads'
 * frees, which do not read the live bitmap (the owner writes its line on every malloc and free,
 * and a read from another core takes the line away from it). A free of a block that carries it is
 * checked against the live bit, so a program's data that matches it by accident costs one look,
 * never a wrong answer; it need not be secret. One constant, so that the owner's free stores it
 * with one instruction (a 32-bit immediate the store sign-extends): an address of the kernel's
 * half, odd, and no small number, so a program's data matches it only by a rare accident. */
#define FREE_TAG ((uintptr_t)(int64_t)(int32_t)0x9e3779b1u)
/* The end of a free list: an index no capacity reaches, so the one test malloc makes of the index
 * it pops (below capacity) turns away the end of the list and any corrupted link at once. */
#define FREE_END (~(uint64_t)0)
struct heap;

/* What the owner writes in a small run on every malloc and free, besides the live bit: out of the
 * descriptor, which other threads' frees read, and in the line of the live bitmap's first word
 * (the whole bitmap, for classes of 256 bytes and more). With it, copies of what malloc reads of
 * the descriptor: the malloc fast path finds the run's page_hot_t in its heap's table and never
 * reads the descriptor (one dependent load less before the block). */
typedef struct page_hot {
	uint64_t free;                  /* index of the first block ready for malloc (the owner's frees
	                                   go here too); FREE_END when there is none */
	uintptr_t start;                /* = the descriptor's start */
	uint64_t capacity;              /* = the descriptor's capacity: 64 bits, so that malloc
	                                   compares the index it pops with it in one instruction */
	uint32_t block_size;            /* = the descriptor's block_size */
	uint32_t used;                  /* live blocks, counting remote frees not yet collected;
	                                   | USED_UNLISTED while the page is off its class list,
	                                   | USED_HEAD while it is first in it */
} page_hot_t;

typedef struct page {
	union {
		struct {                        /* PK_SMALL heads: what the fast paths read. Nothing here
			                           changes while the run serves malloc (but capacity, on a
			                           carve): the line stays shared in every core that frees
			                           into the run, and only the run's page_hot_t and live
			                           bitmap, out of band, are written on malloc and free */
			struct page_hot *hot;   /* the run's out-of-band metadata (META_*): its page_hot_t,
			                           followed by its live bitmap (page_live), a cache line
			                           after its remote_t */
			uintptr_t start;        /* address of the run's first block */
			uint64_t inv;           /* inverse of block_size's odd factor mod 2^64 (block_index) */
			uintptr_t owner;        /* the owning struct heap * (page_heap), | PAGE_REMOTE once
			                           another thread has freed a block here: from then on the
			                           owner's free also looks at the block's tag */
			uint32_t block_size;    /* bytes per block */
			uint32_t spare2;        /* always 0 */
			uint64_t capacity;      /* blocks carved into the free lists so far. 0 in every
			                           other descriptor (free's fast path tests only this):
			                           region_alloc_aligned clears it with the rest of a small run's
			                           fields, free_locked when the run is given back, and no
			                           other kind's fields reach this far. 64 bits, so that free
			                           compares the index with it in one instruction */
		};
		struct {                        /* every other kind */
			uint32_t npages;        /* run length in pages: heads (not PK_SMALL) and tails of free runs */
			uint32_t head_off;      /* pages back to the head: PK_CONT, tails of free runs */
			union {
				uint32_t stamp; /* PK_FREE heads: coarse ms clock when the oldest dirty part was freed */
				uint64_t asked; /* PK_LARGE: bytes the caller asked for; ASKED_CACHED
				                   once freed into a thread's cache (large_cache.c) */
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
	uint8_t spare0;                 /* always 0 (was the live bitmap's granule before bits became per block) */
	uint8_t cls;                    /* size class (PK_SMALL) */
	uint8_t flags;                  /* PF_* of this 64 KiB page, kept across reuse */
	uint8_t rot;                    /* PK_SMALL: trailing zero bits of block_size (block_index) */
	uint8_t spare1;                 /* always 0 */
	uint16_t spare4;                /* always 0 (was capacity, before it moved beside block_size) */
	uint32_t next, prev;            /* page index + 1 (0 = none): heap class list, free bin, delayed stack */
} page_t;

_Static_assert(sizeof(page_t) == 64, "page descriptor is one cache line");


/* What other threads write in a small run: a cache line of its own, just before the run's live
 * bitmap, so that their frees do not take the owner's descriptor line away from it. */
typedef struct remote {
	_Atomic(uint64_t) pending;      /* bit k set: word k of the run's freed bitmap may hold bits */
	struct page *delayed_next;      /* link on heap->delayed */
	struct page *page;              /* the run's head: whoever queues the run reads it here, not
	                                   from a descriptor it found before (see heap_free_remote) */
	void *chunk_next;               /* while no run uses the chunk: the next unused one (runs.c);
	                                   never pending, which a late freer may still or into */
	_Atomic(uint8_t) qstate;        /* Q_* */
	uint8_t pad[31];
} remote_t;

_Static_assert(sizeof(remote_t) == 64, "remote_t is one cache line");

/* remote_t.qstate. Other threads only ever move it to Q_QUEUED: from Q_WATCH, or from Q_QUIET
 * too in the free that marks the run PAGE_REMOTE (free_remote_first). */
enum {
	Q_QUIET = 0,                    /* nothing to tell the owner (or, before the run's first
	                                   remote free, nothing asked: that free queues it anyway) */
	Q_WATCH = 1,                    /* the page went full once since it got remote frees: the
	                                   next remote free queues it */
	Q_QUEUED = 2,                   /* on heap->delayed, until the owner drains it */
	Q_GONE = 3                      /* given back: no more queuing */
};

#define PAGE_REMOTE ((uintptr_t)1)
static inline struct heap *page_heap(const struct page *pg)
{
	return (struct heap *)(__atomic_load_n(&pg->owner, __ATOMIC_RELAXED) & ~PAGE_REMOTE);
}
static inline void page_set_heap(struct page *pg, struct heap *h)
{
	__atomic_store_n(&pg->owner, (uintptr_t)h, __ATOMIC_RELAXED);
}

static inline page_hot_t *page_hot(const struct page *pg) { return pg->hot; }
/* The live bitmap: one bit per block (by block_index), set while the block is live. */
static inline uint64_t *hot_live(const page_hot_t *hot) { return (uint64_t *)(void *)(hot + 1); }
static inline uint64_t *page_live(const struct page *pg) { return hot_live(pg->hot); }
static inline remote_t *page_remote(const struct page *pg) { return (remote_t *)(void *)pg->hot - 1; }

/* A small run's freed bitmap, after its live bitmap: the bits of blocks other threads freed that
 * the owner has not taken back yet (set with an atomic or, cleared by the owner). */
/* remote_t, page_hot_t and live bitmap (to a cache line), freed bitmap */
#define META_FREED   (sizeof(remote_t) + ((sizeof(page_hot_t) + (size_t)LIVE_BYTES + 63) & ~(size_t)63))
#define META_CHUNK   (META_FREED + (size_t)LIVE_BYTES)
static inline _Atomic(uint64_t) *page_freed(const struct page *pg)
{
	return (_Atomic(uint64_t) *)(void *)((char *)pg->hot - sizeof(remote_t) + META_FREED);
}

/* ---- global state (common.c) ---- */
typedef struct contig_global {
	uintptr_t base;                 /* the range, fixed after init */
	size_t size;
	page_t *pages;                  /* descriptor array, one per page of the range */
	size_t npages;                  /* pages in the range */
	config_t cfg;
	_Atomic(int) state;             /* 0 uninit, 1 initialising, 2 ready */
	int slow_only;                  /* leak tracking: every small malloc records its size */
	uintptr_t tag_key;              /* remote_tag()'s key, random, fixed at init */
} contig_global_t;

extern HIDDEN contig_global_t G;

/* Locks of the library this thread holds: while non-zero it must not start a thread
 * (pthread_create allocates, and would wait on a lock this thread holds). */
extern HIDDEN __thread int locks_held __attribute__((tls_model("initial-exec")));
/* Set when this thread's last request was refused by CONTIG_LIMIT (not by a full range): such a
 * request fails with ENOMEM even under CONTIG_FALLBACK=system, or the fallback would take the
 * memory the limit is there to keep (a cgroup's OOM kill). */
extern HIDDEN __thread int limit_refused __attribute__((tls_model("initial-exec")));
/* Set around a first try that the caller will make again after giving back what its thread
 * heap and the abandoned heaps hold (SPEC: what can be returned is, before a request fails at
 * the limit): a refusal then sets limit_refused but is not counted or logged; the second try's
 * is. */
extern HIDDEN __thread int limit_retry __attribute__((tls_model("initial-exec")));

static inline bool range_has(const void *p) { return (uintptr_t)p - G.base < G.size; }
static inline size_t page_index(const void *p) { return ((uintptr_t)p - G.base) >> PAGE_SHIFT; }
static inline page_t *page_of(const void *p) { return &G.pages[page_index(p)]; }
static inline uintptr_t page_addr(size_t idx) { return G.base + (idx << PAGE_SHIFT); }
/* The head of the run whose page pg is (PK_CONT pages name theirs); pg itself for any other kind. */
static inline page_t *page_run_head(page_t *pg) { return pg->kind == PK_CONT ? pg - pg->head_off : pg; }
static inline size_t page_idx(const page_t *pg) { return (size_t)(pg - G.pages); }

/* Index of the block at off bytes past a run's first block when off is a block start, else a
 * number far above any capacity: multiplying by the inverse of block_size's odd factor
 * divides multiples of it exactly (and sends the rest high), and the rotate brings any remainder
 * of the power-of-two factor to the top bits. One test, index < capacity, so checks alignment
 * and range at once. */
static inline uint64_t index_of(uintptr_t off, uint64_t inv, unsigned rot)
{
	uint64_t x = (uint64_t)off * inv;
	return (x >> rot) | (x << ((64 - rot) & 63));
}
/* The index (and so the live bit) of the block at p in the small run whose head is pg, when p
 * starts a block; else a number no capacity reaches, also for p before the run's first block (in
 * its colour: the offset wraps round). */
static inline uint64_t block_index(const page_t *pg, const void *p)
{
	return index_of((uintptr_t)p - pg->start, pg->inv, pg->rot);
}
/* The block whose index in the small run whose head is pg is i: block_index's inverse. */
static inline block_t *block_at(const page_t *pg, uint64_t i)
{
	return (block_t *)(pg->start + i * pg->block_size);
}
/* The same from the run's page_hot_t copies (the malloc side). */
_Static_assert((255ull << PAGE_SHIFT) < (1ull << 32), "a run (at most 255 pages: class_pages is 8 bits) is below 4 GiB");
static inline block_t *hot_block(const page_hot_t *hot, uint64_t i)
{
	/* i is below capacity, so its block lies inside the run, under 4 GiB from its start: the
	 * offset fits 32 bits, one multiply by the 32-bit field in memory */
	return (block_t *)(hot->start + (uint32_t)((uint32_t)i * hot->block_size));
}

#endif
