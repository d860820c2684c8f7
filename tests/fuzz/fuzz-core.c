/* fuzz-core.c - drives the core (every lib/ source linked in directly) with random sequences of the malloc
 * family and of served mmap/munmap/mremap, checking every step against a shadow model.
 *
 * Built two ways (see build.sh):
 *   - with -DFUZZ_LIBFUZZER and clang -fsanitize=fuzzer,address,undefined: a libFuzzer target;
 *   - without it (gcc or clang): a plain driver,
 *       fuzz-core [-s SEED] [-n ITERATIONS] [-t SECONDS]   random inputs from a seed
 *       fuzz-core FILE|DIR...                              replay inputs (a corpus, regress/)
 *
 * Each input is one independent program: a stream of operations read byte by byte; at its end
 * every live block and mapping of the model is checked and released, and the statistics must
 * come back to what they were. Any disagreement prints what was expected and aborts. */
#include "alloc.h"
#include "mmap.h"
#include "heap.h"
#include "region.h"
#include "init.h"
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MREMAP_MAYMOVE
#define MREMAP_MAYMOVE 1
#endif

#if defined(__SANITIZE_ADDRESS__)
#define ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_BUILD 1
#endif
#endif

/* ---- limits of the model ---- */
#define NSLOT       96                  /* live blocks and mapping pieces at once */
#define BUDGET      ((size_t)384 << 20) /* bytes the model may hold live at once */
#define FULL_FILL   ((size_t)64 << 10)  /* blocks up to this are patterned in full, larger ones sampled */
#define EDGE        4096u               /* sampled blocks: this many bytes at each end are patterned */

enum { S_EMPTY, S_HEAP, S_MMAP };

typedef struct slot {
	int kind;                       /* S_* */
	unsigned char *p;               /* the block or first mapped byte of the piece */
	size_t n;                       /* bytes asked (S_HEAP) or mapped bytes of the piece (S_MMAP, page multiple) */
	size_t usable;                  /* alloc_usable_size at allocation (S_HEAP) */
	size_t align;                   /* alignment asked */
	/* the pattern: byte at p' is pat(seed, p' - origin) at every marked offset of [0, fill_n) */
	unsigned char *origin;
	size_t fill_n;                  /* bytes patterned when filled */
	size_t stride;                  /* 0: every byte marked; else edges and 16 bytes every stride */
	uint8_t seed;
	int cut;                        /* S_MMAP: its tail was unmapped (see avoid_mremap_tail) */
} slot_t;

static slot_t slots[NSLOT];
static size_t model_bytes;          /* bytes held live by the model */
static uint64_t nops;               /* operations run, for messages */

/* Known library bugs the random runs step around so that they can look for new ones; the
 * regress/ inputs do not. FUZZ_AVOID=mremap-tail,munmap-hole,mmap-bytes (a list):
 *   mremap-tail  growing a served mapping in place after its tail was unmapped (or shrunk by
 *                mremap) gives PROT_NONE pages (the tail's PROT_NONE is not undone):
 *                regress/mremap-after-tail-unmap.
 *   munmap-hole  a hole unmapped inside a served mapping is never given back when the pieces
 *                around it are unmapped one by one (mmap_bytes stays): regress/munmap-hole-leak.
 *   mmap-bytes   mremap growing a mapping in place does not add to mmap_bytes, and unmapping it
 *                later takes the pages off (it wraps below zero): regress/mremap-grow-mmap-bytes;
 *                the mmap_bytes checks are skipped. */
static int avoid_mremap_tail, avoid_munmap_hole, avoid_mmap_bytes;

/* ---- the input ---- */
typedef struct input { const uint8_t *d; size_t n, i; } input_t;
static int in_left(const input_t *in) { return in->i < in->n; }
static uint8_t u8(input_t *in) { return in->i < in->n ? in->d[in->i++] : 0; }
static uint16_t u16(input_t *in) { uint16_t v = u8(in); return (uint16_t)(v | (uint16_t)u8(in) << 8); }
static uint32_t u32(input_t *in) { uint32_t v = u16(in); return v | (uint32_t)u16(in) << 16; }

/* ---- failure ---- */
static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);
static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fuzz-core: op %llu: ", (unsigned long long)nops);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

#define CHECK(c, ...) do { if (!(c)) die(__VA_ARGS__); } while (0)

/* ---- sizes and alignments ---- */
static const size_t edges[] = {
	0, 1, 15, 16, 17, 127, 128, 129, 1023, 1024, 4095, 4096, 4097, 16383, 16384, 16385,
	65535, 65536, 65537, 131071, 131072, 131073, 262144, 1048575, 1048576, (4u << 20) + 1,
};

static size_t pick_size(input_t *in)
{
	uint8_t k = u8(in);
	switch (k & 7) {
	case 0: case 1: case 2: return u8(in);                                  /* tiny */
	case 3: case 4: return u16(in) & 0x3fff;                                /* up to 16 KiB */
	case 5: return u32(in) % (SMALL_MAX + 4096);                            /* small, past SMALL_MAX */
	case 6: return edges[u8(in) % (sizeof edges / sizeof *edges)];
	default: return (k & 0x80) ? u32(in) % (32u << 20) : u32(in) % (2u << 20);  /* large */
	}
}

static size_t pick_align(input_t *in)
{
	uint8_t k = u8(in);
	return (size_t)1 << (k % 18);       /* 1 .. 128 KiB */
}

/* ---- patterns ---- */
static inline uint8_t pat(uint8_t seed, size_t off)
{
	return (uint8_t)(seed ^ (off * 0x9du) ^ (off >> 8) ^ (off >> 16));
}

/* Runs body for every marked offset off in [lo, hi) (offsets from origin): all of them when
 * stride is 0, else the first and last EDGE bytes of [0, fill_n) and 16 bytes every stride. */
#define FOR_MARKED(s, lo, hi, off, body) do { \
	size_t lo_ = (lo), hi_ = (hi); \
	if (!(s)->stride) { for (size_t off = lo_; off < hi_; off++) { body; } break; } \
	for (size_t off = lo_; off < hi_ && off < EDGE; off++) { body; } \
	size_t m_ = (lo_ > EDGE ? lo_ : EDGE); \
	size_t t_ = (s)->fill_n > EDGE ? (s)->fill_n - EDGE : 0; \
	for (size_t q_ = m_ & ~((s)->stride - 1); q_ < hi_ && q_ < t_; q_ += (s)->stride) \
		for (size_t off = q_ < m_ ? m_ : q_; off < q_ + 16 && off < hi_ && off < t_; off++) { body; } \
	for (size_t off = (t_ > lo_ ? t_ : lo_) < EDGE ? EDGE : (t_ > lo_ ? t_ : lo_); off < hi_; off++) { body; } \
} while (0)

static void fill(slot_t *s, uint8_t seed)
{
	s->seed = seed;
	s->origin = s->p;
	s->fill_n = s->n;
	s->stride = s->n <= FULL_FILL ? 0 : s->n <= (1u << 20) ? 4096 : 65536;
	unsigned char *o = s->origin;
	FOR_MARKED(s, 0, s->fill_n, off, o[off] = pat(seed, off));
}

/* The marked bytes of [p, p+len) (inside s's patterned area) hold the pattern. */
static void verify(const slot_t *s, const unsigned char *p, size_t len, const char *what)
{
	size_t lo = (size_t)(p - s->origin), hi = lo + len;
	if (hi > s->fill_n) hi = s->fill_n;
	const unsigned char *o = s->origin;
	FOR_MARKED(s, lo, hi, off,
		CHECK(o[off] == pat(s->seed, off), "%s: block %p (%zu bytes): byte at +%zu is %#x, wrote %#x",
		      what, (void *)s->p, s->n, off, o[off], pat(s->seed, off)));
}

/* Bytes that must read as zero: a calloc block, a fresh or grown mapping. Sampled like fill. */
static void verify_zero(const unsigned char *p, size_t len, const char *what)
{
	slot_t z = { .fill_n = len, .stride = len <= FULL_FILL ? 0 : 4096 };
	FOR_MARKED(&z, 0, len, off,
		CHECK(p[off] == 0, "%s: %p (%zu bytes): byte at +%zu is %#x, not zero", what, (void *)p, len, off, p[off]));
}

/* ---- the model ---- */
static size_t extent(const slot_t *s)
{
	if (s->kind == S_MMAP) return s->n;
	return s->usable ? s->usable : 1;
}

/* A new block or piece [p, p+len) must be in the range, aligned, and overlap nothing live. */
static void check_new(const unsigned char *p, size_t len, size_t align, int skip, const char *what)
{
	CHECK(contig_owns(p), "%s returned %p, outside the range", what, (void *)p);
	CHECK(contig_owns(p + len - 1), "%s returned %p + %zu, which leaves the range", what, (void *)p, len);
	CHECK(((uintptr_t)p & (align - 1)) == 0, "%s returned %p, not aligned to %zu", what, (void *)p, align);
	CHECK((uintptr_t)p % ALIGN_MIN == 0, "%s returned %p, not aligned to %u", what, (void *)p, ALIGN_MIN);
	for (int i = 0; i < NSLOT; i++) {
		const slot_t *s = &slots[i];
		if (i == skip || s->kind == S_EMPTY) continue;
		size_t e = extent(s);
		CHECK(p + len <= s->p || s->p + e <= p, "%s returned [%p, +%zu), overlapping live %s [%p, +%zu)",
		      what, (void *)p, len, s->kind == S_HEAP ? "block" : "mapping", (void *)s->p, e);
	}
}

static int free_slot(void)
{
	for (int i = 0; i < NSLOT; i++)
		if (slots[i].kind == S_EMPTY) return i;
	return -1;
}

/* The k-th live slot of kind (any kind when 0), k taken modulo their number; -1 when none. */
static int pick_live(input_t *in, int kind)
{
	int idx[NSLOT], n = 0;
	for (int i = 0; i < NSLOT; i++)
		if (slots[i].kind != S_EMPTY && (!kind || slots[i].kind == kind)) idx[n++] = i;
	if (!n) return -1;
	return idx[u8(in) % n];
}

/* Record a new heap block: checks and pattern. */
static void add_block(int i, void *p, size_t n, size_t align, int zeroed, uint8_t seed, const char *what)
{
	slot_t *s = &slots[i];
	size_t u = alloc_usable_size(p);
	CHECK(u >= n, "%s(%zu) = %p: usable size %zu is less than asked", what, n, p, u);
	CHECK(u <= n + (n >> 2) + PAGE_SIZE + align, "%s(%zu) = %p: usable size %zu is implausible", what, n, p, u);
	check_new(p, u ? u : 1, align, i, what);
	if (zeroed) verify_zero(p, n, what);
	*s = (slot_t){ .kind = S_HEAP, .p = p, .n = n, .usable = u, .align = align };
	fill(s, seed);
	model_bytes += n;
}

static void drop(int i)
{
	model_bytes -= slots[i].n;
	slots[i].kind = S_EMPTY;
}

/* ---- statistics ---- */
static contig_stats_t base_st;      /* at the start of the input */

static void get_stats(contig_stats_t *st)
{
	st->size = sizeof *st;
	CHECK(contig_get_stats(st) == 0, "contig_get_stats failed");
}

/* live_blocks/live_bytes count remote frees not yet collected, so they are at least the model's;
 * after collection (collect) they are exactly the model's plus what was live at the start. */
static void check_stats(int collect)
{
	size_t nb = 0, bytes = 0, mm = 0;
	for (int i = 0; i < NSLOT; i++) {
		if (slots[i].kind == S_HEAP) { nb++; bytes += slots[i].usable; }
		if (slots[i].kind == S_MMAP) mm += slots[i].n;
	}
	if (collect) heap_collect_all();
	contig_stats_t st;
	get_stats(&st);
	size_t lb = st.live_blocks - base_st.live_blocks, ly = st.live_bytes - base_st.live_bytes;
	CHECK(lb >= nb, "stats: %zu live blocks, the model has %zu", lb, nb);
	CHECK(ly >= bytes, "stats: %zu live bytes, the model's blocks have %zu usable", ly, bytes);
	if (collect) {
		CHECK(lb == nb, "stats after collection: %zu live blocks, the model has %zu", lb, nb);
		CHECK(ly == bytes, "stats after collection: %zu live bytes, the model's blocks have %zu usable", ly, bytes);
	}
	size_t mb = st.mmap_bytes - base_st.mmap_bytes;
	if (avoid_mmap_bytes) mb = mm;
	CHECK(mb >= mm, "stats: %zu bytes of served mappings, the model holds %zu", mb, mm);
	if (mm == 0)
		CHECK(mb == 0, "stats: %zu bytes of served mappings, the model holds none", mb);
	CHECK(st.committed <= st.mapped, "stats: committed %zu above mapped %zu", st.committed, st.mapped);
	CHECK(st.collisions == base_st.collisions, "stats: %zu collisions appeared", st.collisions - base_st.collisions);
}

/* ---- operations ---- */
static void op_malloc(input_t *in, int how)
{
	int i = free_slot();
	if (i < 0) return;
	size_t n = pick_size(in), align = ALIGN_MIN;
	uint8_t seed = u8(in);
	if (model_bytes + n > BUDGET) return;
	void *p = NULL;
	const char *what = "malloc";
	switch (how) {
	case 0: p = alloc_malloc(n); break;
	case 1: {
		size_t m = (u8(in) & 7) + 1;
		n /= m;
		what = "calloc";
		p = alloc_calloc(n, m);
		n *= m;
		break;
	}
	case 2: align = pick_align(in); what = "memalign"; p = alloc_memalign(align, n); break;
	case 3:
		align = pick_align(in);
		what = "aligned_alloc";
		p = alloc_aligned_alloc(align, n);
		break;
	case 4: {
		align = pick_align(in);
		if (align < sizeof(void *)) align = sizeof(void *);
		what = "posix_memalign";
		int e = alloc_posix_memalign(&p, align, n);
		CHECK(e == 0 || e == ENOMEM, "posix_memalign(%zu, %zu) = %d", align, n, e);
		if (e) p = NULL;
		break;
	}
	case 5: align = OS_PAGE; what = "valloc"; p = alloc_valloc(n); break;
	case 6:
		align = OS_PAGE;
		what = "pvalloc";
		p = alloc_pvalloc(n);
		n = align_up(n ? n : 1, OS_PAGE);
		break;
	default: what = "realloc(NULL)"; p = alloc_realloc(NULL, n); break;
	}
	CHECK(p != NULL, "%s(%zu, align %zu) failed (errno %d) with %zu bytes live", what, n, align, errno, model_bytes);
	add_block(i, p, n, align, how == 1, seed, what);
}

static void op_realloc(input_t *in)
{
	int i = pick_live(in, S_HEAP);
	if (i < 0) return;
	slot_t *s = &slots[i];
	size_t n = pick_size(in);
	uint8_t seed = u8(in);
	if (n > s->n && model_bytes + n - s->n > BUDGET) return;
	if (n == 0 && (seed & 1)) {                 /* glibc: frees, returns NULL */
		verify(s, s->p, s->n, "realloc");
		errno = 0;
		CHECK(alloc_realloc(s->p, 0) == NULL, "realloc(%p, 0) did not return NULL", (void *)s->p);
		drop(i);
		return;
	}
	if (n == 0) n = 1;
	unsigned char *old = s->p;
	slot_t copy = *s;
	unsigned char *q = alloc_realloc(old, n);
	CHECK(q != NULL, "realloc(%p, %zu) failed (errno %d)", (void *)old, n, errno);
	/* the old contents, up to the smaller size, moved with the block */
	copy.origin = q;
	copy.p = q;
	verify(&copy, q, n < s->n ? n : s->n, "realloc");
	model_bytes -= s->n;
	s->kind = S_EMPTY;
	add_block(i, q, n, ALIGN_MIN, 0, seed, "realloc");
	if (copy.align > ALIGN_MIN && q == old)
		CHECK(((uintptr_t)q & (copy.align - 1)) == 0, "realloc in place lost alignment");
}

static void op_free(input_t *in, int how)
{
	int i = pick_live(in, S_HEAP);
	if (i < 0) return;
	slot_t *s = &slots[i];
	verify(s, s->p, s->n, "free");
	int e = errno = 1234;
	switch (how) {
	case 0: alloc_free(s->p); break;
	case 1: alloc_free_sized(s->p, s->n); break;
	default: alloc_free_aligned_sized(s->p, s->align, s->n); break;
	}
	CHECK(errno == e, "free changed errno to %d", errno);
	drop(i);
}

static void op_usable(input_t *in)
{
	int i = pick_live(in, S_HEAP);
	if (i < 0) return;
	slot_t *s = &slots[i];
	size_t u = alloc_usable_size(s->p);
	CHECK(u == s->usable, "malloc_usable_size(%p) = %zu, was %zu", (void *)s->p, u, s->usable);
	/* truly usable: the slack past the asked size can be written without harm */
	if (u > s->n) {
		size_t a = s->n, b = u - s->n > 64 ? s->n + 64 : u;
		memset(s->p + a, 0xa5, b - a);
		memset(s->p + u - (u - a > 16 ? 16 : u - a), 0x5a, u - a > 16 ? 16 : u - a);
	}
	verify(s, s->p, s->n, "malloc_usable_size");
}

static void op_verify_one(input_t *in)
{
	int i = pick_live(in, 0);
	if (i < 0) return;
	verify(&slots[i], slots[i].p, slots[i].n, "check");
}

/* Impossible requests fail cleanly and change nothing. */
static void op_bad(input_t *in)
{
	switch (u8(in) % 8) {
	case 0: errno = 0; CHECK(!alloc_malloc(SIZE_MAX) && errno == ENOMEM, "malloc(SIZE_MAX)"); break;
	case 1: errno = 0; CHECK(!alloc_calloc(SIZE_MAX / 2, 3) && errno == ENOMEM, "calloc overflow"); break;
	case 2: errno = 0; CHECK(!alloc_malloc(SIZE_MAX - 4096) && errno == ENOMEM, "malloc(SIZE_MAX-4096)"); break;
	case 3: { void *p = (void *)1; CHECK(alloc_posix_memalign(&p, 24, 10) == EINVAL && p == (void *)1,
	                                      "posix_memalign(24)"); break; }
	case 4: errno = 0; CHECK(!alloc_aligned_alloc(48, 96) && errno == EINVAL, "aligned_alloc(48)"); break;
	case 5: errno = 0; CHECK(!alloc_reallocarray(NULL, SIZE_MAX / 4, 8) && errno == ENOMEM, "reallocarray overflow"); break;
	case 6: errno = 0; CHECK(!alloc_memalign(64, SIZE_MAX - 100) && errno == ENOMEM, "memalign(64, huge)"); break;
	default: {
		int i = pick_live(in, S_HEAP);
		if (i < 0) break;
		errno = 0;
		CHECK(!alloc_realloc(slots[i].p, SIZE_MAX - 8) && errno == ENOMEM, "realloc(p, huge)");
		verify(&slots[i], slots[i].p, slots[i].n, "failed realloc");
		break;
	}
	}
}

/* ---- served mappings ---- */
static void op_mmap(input_t *in)
{
	int i = free_slot();
	if (i < 0) return;
	size_t len = pick_size(in);
	uint8_t seed = u8(in);
	if (len == 0) len = 1;
	if (model_bytes + len > BUDGET) return;
	unsigned char *p = mm_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED, "mmap(%zu) failed (errno %d)", len, errno);
	len = align_up(len, OS_PAGE);
	check_new(p, len, OS_PAGE, i, "mmap");
	verify_zero(p, len, "mmap");
	slots[i] = (slot_t){ .kind = S_MMAP, .p = p, .n = len, .align = OS_PAGE };
	fill(&slots[i], seed);
	model_bytes += len;
}

static void op_munmap(input_t *in)
{
	int i = pick_live(in, S_MMAP);
	if (i < 0) return;
	slot_t *s = &slots[i];
	size_t pages = s->n / OS_PAGE;
	uint8_t how = u8(in);
	size_t k = pages > 1 ? 1 + u16(in) % (pages - 1) : 1;    /* 1 .. pages-1 */
	verify(s, s->p, s->n, "munmap");
	if (pages == 1 || how % 4 == 0) {               /* the whole piece */
		CHECK(mm_munmap(s->p, s->n) == 0, "munmap(%p, %zu) failed (errno %d)", (void *)s->p, s->n, errno);
		drop(i);
		return;
	}
	size_t cut = k * OS_PAGE;
	switch (how % 4) {
	case 1:                                         /* a prefix */
		CHECK(mm_munmap(s->p, cut) == 0, "munmap prefix failed (errno %d)", errno);
		s->p += cut;
		s->n -= cut;
		model_bytes -= cut;
		break;
	case 2:                                         /* a suffix */
		CHECK(mm_munmap(s->p + s->n - cut, cut) == 0, "munmap suffix failed (errno %d)", errno);
		s->n -= cut;
		s->cut = 1;
		model_bytes -= cut;
		break;
	default: {                                      /* a hole: the piece becomes two */
		if (pages < 3 || avoid_munmap_hole) return;
		int j = free_slot();
		if (j < 0) return;
		size_t at = 1 + k % (pages - 2);                /* first page of the hole */
		size_t hl = 1 + (size_t)u8(in) % (pages - 1 - at);  /* its length, leaving a tail */
		unsigned char *h = s->p + at * OS_PAGE;
		CHECK(mm_munmap(h, hl * OS_PAGE) == 0, "munmap hole failed (errno %d)", errno);
		slots[j] = *s;
		slots[j].p = h + hl * OS_PAGE;
		slots[j].n = s->p + s->n - slots[j].p;
		s->n = at * OS_PAGE;
		s->cut = 1;
		model_bytes -= hl * OS_PAGE;
		break;
	}
	}
	verify(s, s->p, s->n, "after munmap");
}

static void op_mremap(input_t *in)
{
	int i = pick_live(in, S_MMAP);
	if (i < 0) return;
	slot_t *s = &slots[i];
	size_t newlen = align_up(pick_size(in) + 1, OS_PAGE);
	int flags = u8(in) & 1 ? MREMAP_MAYMOVE : 0;
	uint8_t seed = u8(in);
	if (newlen > s->n && model_bytes + newlen - s->n > BUDGET) return;
	if (newlen > s->n && s->cut && avoid_mremap_tail) return;
	verify(s, s->p, s->n, "mremap");
	unsigned char *q = mm_mremap(s->p, s->n, newlen, flags, NULL);
	if (q == MAP_FAILED) {
		CHECK(!flags && errno == ENOMEM, "mremap(%p, %zu, %zu, %d) failed (errno %d)",
		      (void *)s->p, s->n, newlen, flags, errno);
		verify(s, s->p, s->n, "failed mremap");
		return;
	}
	CHECK(flags || q == s->p, "mremap without MAYMOVE moved %p to %p", (void *)s->p, (void *)q);
	slot_t copy = *s;
	copy.origin = q - (s->p - s->origin);
	size_t keep = newlen < s->n ? newlen : s->n;
	verify(&copy, q, keep, "mremap");
	if (newlen > s->n) verify_zero(q + s->n, newlen - s->n, "mremap growth");
	model_bytes = model_bytes - s->n + newlen;
	s->kind = S_EMPTY;
	check_new(q, newlen, OS_PAGE, i, "mremap");
	/* a shrink unmaps the tail; a move leaves nothing cut behind the new mapping */
	int cut = newlen < copy.n ? 1 : q == copy.p ? copy.cut : 0;
	*s = (slot_t){ .kind = S_MMAP, .p = q, .n = newlen, .align = OS_PAGE, .cut = cut };
	fill(s, seed);
}

/* ---- one input ---- */
static void release_all(void)
{
	for (int i = 0; i < NSLOT; i++) {
		slot_t *s = &slots[i];
		if (s->kind == S_EMPTY) continue;
		verify(s, s->p, s->n, "final");
		if (s->kind == S_HEAP) alloc_free(s->p);
		else CHECK(mm_munmap(s->p, s->n) == 0, "final munmap failed");
		drop(i);
	}
	CHECK(model_bytes == 0, "model accounting: %zu bytes left", model_bytes);
}

static int run_one(const uint8_t *data, size_t size)
{
	input_t in = { data, size, 0 };
	static int first = 1;
	if (first) {
		/* the first input sets the baseline the statistics are compared with */
		const char *av = getenv("FUZZ_AVOID");
		first = 0;
		avoid_mremap_tail = av && strstr(av, "mremap-tail");
		avoid_munmap_hole = av && strstr(av, "munmap-hole");
		avoid_mmap_bytes = av && strstr(av, "mmap-bytes");
		heap_collect_all();
	}
	get_stats(&base_st);
	nops = 0;
	while (in_left(&in)) {
		uint8_t op = u8(&in);
		nops++;
		switch (op % 24) {
		case 0: case 1: case 2: case 3: op_malloc(&in, 0); break;
		case 4: op_malloc(&in, 1); break;
		case 5: op_malloc(&in, 2); break;
		case 6: op_malloc(&in, 3); break;
		case 7: op_malloc(&in, 4); break;
		case 8: op_malloc(&in, (op >> 5) & 1 ? 5 : 6); break;
		case 9: op_malloc(&in, 7); break;
		case 10: case 11: case 12: op_realloc(&in); break;
		case 13: case 14: case 15: op_free(&in, 0); break;
		case 16: op_free(&in, (op >> 5) & 1 ? 1 : 2); break;
		case 17: op_usable(&in); break;
		case 18: op_mmap(&in); break;
		case 19: op_munmap(&in); break;
		case 20: op_mremap(&in); break;
		case 21: op_bad(&in); break;
		case 22: op_verify_one(&in); break;
		default:
			switch ((op >> 5) & 7) {
			case 0: contig_purge(); break;
			case 1: alloc_trim(0); break;
			default: check_stats((op >> 5) & 1); break;
			}
			break;
		}
	}
	check_stats(1);
	release_all();
	check_stats(1);
	return 0;
}

/* AddressSanitizer's shadow gap holds the default range: move it (read once, at load, hence the
 * re-exec). Same as tests/unit/runner.c. */
static void asan_reexec(char **argv)
{
#ifdef ASAN_BUILD
	if (!getenv("CONTIG_BASE")) {
		setenv("CONTIG_BASE", "0x300000000000", 1);
		execv("/proc/self/exe", argv);
		perror("fuzz-core: execv /proc/self/exe");
		exit(2);
	}
#else
	(void)argv;
#endif
}

#ifdef FUZZ_LIBFUZZER
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	asan_reexec(*argv);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return run_one(data, size); }

#else
/* ---- the plain driver ---- */
static uint64_t rng;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The input being run, written to ./fuzz-crash-input if it kills us (write(2) only). */
static const uint8_t *cur_buf;
static size_t cur_len;

static void on_crash(int sig)
{
	int fd = open("fuzz-crash-input", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		ssize_t w = write(fd, cur_buf, cur_len);
		(void)w;
		close(fd);
		static const char msg[] = "fuzz-core: the failing input is in ./fuzz-crash-input\n";
		w = write(2, msg, sizeof msg - 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) { perror(path); return 1; }
	static uint8_t buf[1 << 20];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	run_one(buf, n);
	return 0;
}

static int replay(const char *path, int *count)
{
	struct stat sb;
	if (stat(path, &sb) != 0) { perror(path); return 1; }
	if (!S_ISDIR(sb.st_mode)) { (*count)++; return replay_file(path); }
	DIR *d = opendir(path);
	if (!d) { perror(path); return 1; }
	struct dirent *e;
	int bad = 0;
	char full[4096];
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.') continue;
		snprintf(full, sizeof full, "%s/%s", path, e->d_name);
		bad |= replay(full, count);
	}
	closedir(d);
	return bad;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long long seed = 1, iters = 0;
	double seconds = 0;
	int opt, files = 0;
	asan_reexec(argv);
	while ((opt = getopt(argc, argv, "s:n:t:h")) != -1) {
		switch (opt) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': iters = strtoull(optarg, NULL, 0); break;
		case 't': seconds = strtod(optarg, NULL); break;
		default:
			fprintf(stderr, "usage: %s [-s SEED] [-n ITERATIONS] [-t SECONDS] | FILE|DIR...\n", argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		int bad = 0;
		for (int i = optind; i < argc; i++) bad |= replay(argv[i], &files);
		printf("fuzz-core: replayed %d input(s)\n", files);
		return bad;
	}
	if (!iters && !seconds) iters = 1000;
	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
	signal(SIGABRT, on_crash);
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	static uint8_t buf[4096];
	double t0 = now();
	unsigned long long it;
	for (it = 0; (!iters || it < iters) && (!seconds || now() - t0 < seconds); it++) {
		size_t n = 64 + next_rand() % (sizeof buf - 64);
		for (size_t i = 0; i < n; i += 8) {
			uint64_t r = next_rand();
			memcpy(buf + i, &r, n - i < 8 ? n - i : 8);
		}
		cur_buf = buf;
		cur_len = n;
		run_one(buf, n);
	}
	printf("fuzz-core: %llu random inputs from seed %llu in %.1f s\n", it, seed, now() - t0);
	return 0;
}
#endif
