/* cxx.c - C++ operator new and delete, every form, served by the core directly (not through
 * libstdc++'s operators calling malloc). Only a failed throwing or nothrow new goes further: it
 * is forwarded to libstdc++'s own operator of the same form, which runs the new_handler loop
 * (calling our malloc again) and throws std::bad_alloc or returns NULL, exactly as it would. */
#include "config.h"
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include "alloc.h"
#include "fmt.h"

#define PUBLIC __attribute__((visibility("default")))

/* libstdc++'s operator named sym, looked up once. */
static void *next_op(_Atomic(void *) *cache, const char *sym)
{
	void *f = atomic_load_explicit(cache, memory_order_acquire);
	if (!f) {
		f = dlsym(RTLD_NEXT, sym);
		if (!f) fatal_msg(sym, "out of memory, and no C++ runtime to report it");
		atomic_store_explicit(cache, f, memory_order_release);
	}
	return f;
}

#define NEW_FAILED(type, sym, ...) do { \
	static _Atomic(void *) cache_; \
	type next_ = (type)next_op(&cache_, sym); \
	return next_(__VA_ARGS__); \
} while (0)

typedef struct nothrow nothrow_t;       /* std::nothrow_t: only its address is passed */
typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const nothrow_t *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const nothrow_t *);

/* ---- new ---- */
static void *znwm_failed(size_t n) { NEW_FAILED(new_fn, "_Znwm", n); }
static void *znam_failed(size_t n) { NEW_FAILED(new_fn, "_Znam", n); }
PUBLIC void *_Znwm(size_t n);
PUBLIC void *_Znwm(size_t n) { return alloc_new_inline(n, znwm_failed); }
PUBLIC void *_Znam(size_t n);
PUBLIC void *_Znam(size_t n) { return alloc_new_inline(n, znam_failed); }
PUBLIC void *_ZnwmRKSt9nothrow_t(size_t n, const nothrow_t *t);
PUBLIC void *_ZnwmRKSt9nothrow_t(size_t n, const nothrow_t *t)
{
	void *p = alloc_malloc(n);
	if (likely(p != NULL)) return p;
	NEW_FAILED(new_nt_fn, "_ZnwmRKSt9nothrow_t", n, t);
}
PUBLIC void *_ZnamRKSt9nothrow_t(size_t n, const nothrow_t *t);
PUBLIC void *_ZnamRKSt9nothrow_t(size_t n, const nothrow_t *t)
{
	void *p = alloc_malloc(n);
	if (likely(p != NULL)) return p;
	NEW_FAILED(new_nt_fn, "_ZnamRKSt9nothrow_t", n, t);
}
/* Aligned forms: an alignment that is not a power of two is the caller's error; libstdc++'s
 * operator decides what happens (it reports it). A size no alignment can serve goes to the
 * unaligned operator of the same kind as SIZE_MAX: libstdc++'s aligned one rounds the size up
 * to the alignment, which wraps near SIZE_MAX into a tiny block (glibc and libstdc++ hand that
 * out alone; a caller trusting its size overflows it). */
static inline bool al_impossible(size_t n, size_t al) { return al && n > SIZE_MAX / 2 - al; }
/* An aligned new's block, or NULL: malloc's fast path for alignments up to 64 bytes (a type with
 * alignas(32) or alignas(64)), else alloc_memalign. */
static inline void *new_aligned(size_t n, size_t al)
{
	return al && !(al & (al - 1)) ? alloc_memalign_inline(al, n) : NULL;
}
PUBLIC void *_ZnwmSt11align_val_t(size_t n, size_t al);
PUBLIC void *_ZnwmSt11align_val_t(size_t n, size_t al)
{
	void *p = new_aligned(n, al);
	if (likely(p != NULL)) return p;
	if (al_impossible(n, al)) return _Znwm(SIZE_MAX);
	NEW_FAILED(new_al_fn, "_ZnwmSt11align_val_t", n, al);
}
PUBLIC void *_ZnamSt11align_val_t(size_t n, size_t al);
PUBLIC void *_ZnamSt11align_val_t(size_t n, size_t al)
{
	void *p = new_aligned(n, al);
	if (likely(p != NULL)) return p;
	if (al_impossible(n, al)) return _Znam(SIZE_MAX);
	NEW_FAILED(new_al_fn, "_ZnamSt11align_val_t", n, al);
}
PUBLIC void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const nothrow_t *t);
PUBLIC void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const nothrow_t *t)
{
	void *p = new_aligned(n, al);
	if (likely(p != NULL)) return p;
	if (al_impossible(n, al)) return _ZnwmRKSt9nothrow_t(SIZE_MAX, t);
	NEW_FAILED(new_al_nt_fn, "_ZnwmSt11align_val_tRKSt9nothrow_t", n, al, t);
}
PUBLIC void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const nothrow_t *t);
PUBLIC void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const nothrow_t *t)
{
	void *p = new_aligned(n, al);
	if (likely(p != NULL)) return p;
	if (al_impossible(n, al)) return _ZnamRKSt9nothrow_t(SIZE_MAX, t);
	NEW_FAILED(new_al_nt_fn, "_ZnamSt11align_val_tRKSt9nothrow_t", n, al, t);
}

/* ---- delete: sized forms check that the size fits the block (as free_sized does) ---- */
PUBLIC void _ZdlPv(void *p);
PUBLIC void _ZdlPv(void *p) { alloc_free_inline(p); }
PUBLIC void _ZdaPv(void *p);
PUBLIC void _ZdaPv(void *p) { alloc_free_inline(p); }
PUBLIC void _ZdlPvRKSt9nothrow_t(void *p, const nothrow_t *t);
PUBLIC void _ZdlPvRKSt9nothrow_t(void *p, const nothrow_t *t) { (void)t; alloc_free(p); }
PUBLIC void _ZdaPvRKSt9nothrow_t(void *p, const nothrow_t *t);
PUBLIC void _ZdaPvRKSt9nothrow_t(void *p, const nothrow_t *t) { (void)t; alloc_free(p); }
PUBLIC void _ZdlPvm(void *p, size_t n);
PUBLIC void _ZdlPvm(void *p, size_t n) { alloc_delete_sized_inline(p, n); }
PUBLIC void _ZdaPvm(void *p, size_t n);
PUBLIC void _ZdaPvm(void *p, size_t n) { alloc_delete_sized_inline(p, n); }
PUBLIC void _ZdlPvSt11align_val_t(void *p, size_t al);
PUBLIC void _ZdlPvSt11align_val_t(void *p, size_t al) { (void)al; alloc_free(p); }
PUBLIC void _ZdaPvSt11align_val_t(void *p, size_t al);
PUBLIC void _ZdaPvSt11align_val_t(void *p, size_t al) { (void)al; alloc_free(p); }
PUBLIC void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const nothrow_t *t);
PUBLIC void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const nothrow_t *t)
{
	(void)al; (void)t;
	alloc_free(p);
}
PUBLIC void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const nothrow_t *t);
PUBLIC void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const nothrow_t *t)
{
	(void)al; (void)t;
	alloc_free(p);
}
PUBLIC void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al);
PUBLIC void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al) { alloc_delete_sized_inline(p, n); (void)al; }
PUBLIC void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t al);
PUBLIC void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t al) { alloc_delete_sized_inline(p, n); (void)al; }
