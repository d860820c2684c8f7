/* stack.c - allocation stacks: capture by DWARF CFI unwinding (libgcc's _Unwind_Backtrace, so
 * programs built without frame pointers unwind too) and a lock-free deduplicating table in memory
 * outside the range. Report-time symbolisation is stack_sym.c's. */
#include "stack.h"
#include "range.h"
#include "fmt.h"
#include "os.h"
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unwind.h>

extern char **environ;

/* Our own module, so that its frames (malloc, the slow paths, this file) are skipped. */
extern const char __ehdr_start[] HIDDEN;
extern const char __etext[] HIDDEN;

/* ---- capture ---- */
static __thread int capturing __attribute__((tls_model("initial-exec")));  /* recursion guard */
static _Atomic(int) unwind_ready;       /* set once the loader is done (our constructor ran) */
static _Atomic(int) captures_over;      /* set after the check at exit: nothing records stacks any more */
static unsigned depth = STACK_DEPTH_DEFAULT;

/* libstdc++'s operator new family: frames inside them are skipped too, so that frame #0 is the
 * caller of new. Resolved once, in the constructor (the loader is up; dlsym is safe there). */
#define NEW_FUNCS 8
static uintptr_t new_lo[NEW_FUNCS], new_hi[NEW_FUNCS];
static unsigned n_new;

typedef struct walk {
	uintptr_t *pcs;                 /* frames kept */
	unsigned n, max;                /* kept so far, capacity */
	unsigned seen;                  /* frames visited (a bound against a corrupt stack) */
	int skipping;                   /* still inside our own or operator new's frames */
	int stopped;                    /* we ended the walk (depth reached), not the unwinder */
	uintptr_t pend_pc, pend_sp;     /* the frame before, learned once its caller's SP is known */
	uintptr_t pend_rbp;             /* its rbp, for the rule its caller's rbp follows */
} walk_t;

static bool in_self(uintptr_t pc) { return pc >= (uintptr_t)__ehdr_start && pc < (uintptr_t)__etext; }

static bool in_new(uintptr_t pc)
{
	for (unsigned i = 0; i < n_new; i++)
		if (pc > new_lo[i] && pc <= new_hi[i]) return true;
	return false;
}

/* ---- the frame cache: a fast walk for frames seen before ----
 * On x86-64 the return address sits just below the CFA. For code without a frame pointer the
 * CFA is the stack pointer plus a constant per pc; for frame-pointer code (CFA == rbp + 16, where
 * alloca makes CFA - SP vary) it is the frame's rbp plus 16, and the caller's rbp lies just below
 * the return address. So the fast walk carries rbp from frame to frame, and the DWARF walk
 * records, per return address, CFA - SP and what the caller's rbp is: this frame's (rbp not
 * touched), FC_RBP_FP (a frame-pointer frame), or the word at CFA - 8k (rbp saved in the
 * prologue, used as a register). Once a pc was seen twice with the same offset and rule (never
 * with others), with its return address at CFA - 8, later captures step over it with a few
 * loads. Anything unknown, any doubt, falls back to the DWARF walk. Before frame-pointer frames
 * were cached, a program built with frame pointers (Fedora's and Ubuntu's packages now are)
 * took the DWARF walk on every capture: 17x the run time of plain preloading under
 * CONTIG_LEAKS, against 1-3x without them. An entry is one word:
 * pc << 17 | rule << 14 | off / 8 << 4 | seen << 2 | terminal << 1 | bad. */
#define FC_BITS   16u
#define FC_SLOTS  (1u << FC_BITS)
#define FC_PROBES 16u
#define FC_OFF_MAX ((uintptr_t)0x3ff << 3)      /* frames up to 8 KiB without a frame pointer */
#define FC_PC_SHIFT 17
#define FC_RBP_SAME 0u                          /* the caller's rbp is this frame's */
#define FC_RBP_FP   1u                          /* CFA = rbp + 16, the caller's rbp at CFA - 16 */
                                                /* 2..6: the caller's rbp at CFA - 8 * rule */
#define FC_RBP_LOST 7u                          /* not known (seen with two rules, or none fits):
                                                   a frame-pointer frame above it ends the fast walk */
static _Atomic(uint64_t) *fcache;               /* FC_SLOTS words, meta memory */
static void *map_once(_Atomic(uintptr_t) *where, size_t len);
static _Atomic(uintptr_t) fcache_map;
static __thread uintptr_t stack_hi __attribute__((tls_model("initial-exec")));  /* highest CFA seen here */
/* The lowest stack address a capture of this thread reached since stack_capture_low last took it
 * (0: none): how deep the allocation that made the capture went (leak_scrubbed). mark_low notes
 * the stack pointer of the function it is inlined into. */
static __thread uintptr_t stack_low __attribute__((tls_model("initial-exec")));
static ALWAYS_INLINE void mark_low(void)
{
	uintptr_t a;
#if defined(__x86_64__)
	__asm__ volatile("mov %%rsp, %0" : "=r"(a));
#else
	a = (uintptr_t)__builtin_frame_address(0);
#endif
	if (!stack_low || a < stack_low) stack_low = a;
}

uintptr_t stack_capture_low(void)
{
	uintptr_t a = stack_low;
	stack_low = 0;
	return a;
}
/* Debug builds check every fast walk against the DWARF one (so the cache cannot rot). */
static const bool stack_verify = CONTIG_DEBUG;

static _Atomic(uint64_t) *fc_slot(uintptr_t pc, bool create)
{
	if (!fcache) return NULL;
	uint32_t h = (uint32_t)((pc * 0x9e3779b97f4a7c15ull) >> (64 - FC_BITS));
	for (uint32_t k = 0; k < FC_PROBES; k++, h = (h + 1) & (FC_SLOTS - 1)) {
		uint64_t e = atomic_load_explicit(&fcache[h], memory_order_relaxed);
		if ((e >> FC_PC_SHIFT) == pc) return &fcache[h];
		if (!e) {
			if (!create) return NULL;
			uint64_t want = (uint64_t)pc << FC_PC_SHIFT;
			if (atomic_compare_exchange_strong(&fcache[h], &e, want) || (e >> FC_PC_SHIFT) == pc)
				return &fcache[h];
		}
	}
	return NULL;
}

/* Record one observation of pc: off = CFA - SP and the rule for the caller's rbp (off 0: not
 * cacheable; a frame-pointer frame's off is not used), or the walk's last frame. */
static void fc_learn(uintptr_t pc, uintptr_t off, unsigned rule, bool terminal)
{
	if (!pc || pc >> 47) return;
	_Atomic(uint64_t) *slot = fc_slot(pc, true);
	if (!slot) return;
	if (rule == FC_RBP_FP) off = 8;                 /* (any valid offset: it is not used) */
	uint64_t e = atomic_load_explicit(slot, memory_order_relaxed), want;
	do {
		uint64_t seen = (e >> 2) & 3, old_off = ((e >> 4) & 0x3ff) << 3;
		unsigned r = seen && !terminal && ((e >> 14) & 7) != rule ? FC_RBP_LOST : rule;
		bool bad = (e & 1) || (!terminal && (!off || off > FC_OFF_MAX || (off & 7))) ||
		           (seen && !terminal && !(e & 2) && old_off != off) || (seen && terminal != !!(e & 2)) ||
		           (seen && !terminal && (((e >> 14) & 7) == FC_RBP_FP) != (rule == FC_RBP_FP));
		want = (uint64_t)pc << FC_PC_SHIFT;
		if (bad) want |= 1;
		else want |= (terminal ? 0 : (uint64_t)r << 14 | (uint64_t)(off >> 3) << 4) |
		             (seen < 3 ? seen + 1 : 3) << 2 | (terminal ? 2u : 0u);
	} while (want != e && !atomic_compare_exchange_weak(slot, &e, want));
}

/* The fast walk from our own CFA, with the rbp our caller had (0: not known); false when any
 * frame is not known well enough. */
static bool fast_walk(walk_t *w, uintptr_t sp, uintptr_t rbp)
{
	mark_low();
	uintptr_t hi = stack_hi;
	bool rbp_known = rbp != 0;
	if (!fcache || !hi || sp >= hi) return false;
	uintptr_t pc = ((const uintptr_t *)sp)[-1];
	for (unsigned steps = 0; pc && steps < STACK_DEPTH_MAX + 64; steps++) {
		_Atomic(uint64_t) *slot = fc_slot(pc, false);
		if (!slot) return false;
		uint64_t e = atomic_load_explicit(slot, memory_order_relaxed);
		if ((e & 1) || ((e >> 2) & 3) < 2) return false;
		if (w->skipping && (in_self(pc) || in_new(pc))) {
			/* one of ours: not kept */
		} else {
			w->skipping = 0;
			w->pcs[w->n++] = pc;
			if (w->n == w->max) return true;
		}
		if (e & 2) return true;                         /* the outermost frame */
		unsigned rule = (unsigned)(e >> 14) & 7;
		if (rule == FC_RBP_FP && !rbp_known) return false;
		uintptr_t cfa = rule == FC_RBP_FP ? rbp + 16 : sp + (((e >> 4) & 0x3ff) << 3);
		if (cfa <= sp || cfa > hi || (cfa & 7)) return false;
		if (rule == FC_RBP_FP) rbp = ((const uintptr_t *)cfa)[-2];
		else if (rule == FC_RBP_LOST) rbp_known = false;
		else if (rule != FC_RBP_SAME) {
			if (cfa - (uintptr_t)8 * rule < sp) return false;
			rbp = ((const uintptr_t *)cfa)[-(ptrdiff_t)rule];
			rbp_known = true;
		}
		pc = ((const uintptr_t *)cfa)[-1];
		sp = cfa;
	}
	return false;
}

/* libgcc's context for a frame holds that frame's stack pointer as "CFA" (the CFA of the frame
 * it just stepped out of): frame i's CFA - SP is known at frame i + 1. */
static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *ctx, void *arg)
{
	walk_t *w = arg;
	mark_low();
	uintptr_t pc = (uintptr_t)_Unwind_GetIP(ctx);
	uintptr_t sp = (uintptr_t)_Unwind_GetCFA(ctx);
	if (!pc) return _URC_END_OF_STACK;      /* after an undefined return address (_start, clone) */
	uintptr_t rbp = (uintptr_t)_Unwind_GetGR(ctx, 6);
	if (w->pend_pc) {               /* the frame before: cacheable if its return address is pc */
		const uintptr_t *cfa = (const uintptr_t *)sp;
		bool ok = sp > w->pend_sp && cfa[-1] == pc;
		unsigned rule = FC_RBP_LOST;
		if (ok && sp == w->pend_rbp + 16 && cfa[-2] == rbp) rule = FC_RBP_FP;
		else if (ok && rbp == w->pend_rbp) rule = FC_RBP_SAME;
		else if (ok)
			for (unsigned k = 2; k < FC_RBP_LOST && sp - (uintptr_t)8 * k >= w->pend_sp; k++)
				if (cfa[-(ptrdiff_t)k] == rbp) { rule = k; break; }
		fc_learn(w->pend_pc, ok ? sp - w->pend_sp : 0, rule, false);
	}
	if (sp > stack_hi) stack_hi = sp;
	w->pend_pc = pc;
	w->pend_sp = sp;
	w->pend_rbp = rbp;
	if (++w->seen > STACK_DEPTH_MAX + 64) { w->stopped = 1; return _URC_END_OF_STACK; }
	if (w->skipping) {
		if (in_self(pc) || in_new(pc)) return _URC_NO_REASON;
		w->skipping = 0;
	}
	w->pcs[w->n++] = pc;
	if (w->n < w->max) return _URC_NO_REASON;
	w->stopped = 1;
	return _URC_END_OF_STACK;
}

/* CONTIG_LEAKS_DEPTH: frames kept per stack, 1..STACK_DEPTH_MAX. Read in the constructor. */
static void read_depth(void)
{
	static const char name[] = "CONTIG_LEAKS_DEPTH=";
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, name, sizeof name - 1) != 0) continue;
		const char *v = *e + sizeof name - 1;
		uint64_t d = 0;
		const char *s = v;
		while (*s >= '0' && *s <= '9' && d <= STACK_DEPTH_MAX) d = d * 10 + (uint64_t)(*s++ - '0');
		if (*s || s == v || d < 1 || d > STACK_DEPTH_MAX) {
			char buf[160];
			fmtbuf_t b;
			fmt_init(&b, buf, sizeof buf);
			fmt_str(&b, "CONTIG_LEAKS_DEPTH=\"");
			fmt_str(&b, v);
			fmt_str(&b, "\" is not a number of frames from 1 to 64; using 16");
			log_line(buf);
			return;
		}
		depth = (unsigned)d;
		return;
	}
}

static void find_operator_new(void)
{
	static const char *const names[NEW_FUNCS] = {
		"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
		"_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
		"_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
	};
	for (unsigned i = 0; i < NEW_FUNCS; i++) {
		void *f = dlsym(RTLD_DEFAULT, names[i]);
		Dl_info info;
		const ElfW(Sym) *sym = NULL;
		if (!f || !dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size) continue;
		new_lo[n_new] = (uintptr_t)f;
		new_hi[n_new] = (uintptr_t)f + sym->st_size;   /* a return address may equal the end */
		n_new++;
	}
}

/* CONTIG_LEAKS_DEPTH fixes the size of the stack records, so it is read once, before the first
 * capture (early or from the constructor). */
static void depth_once(void)
{
	static _Atomic(int) done;
	int expect = 0;
	if (atomic_load_explicit(&done, memory_order_acquire) == 2) return;
	if (atomic_compare_exchange_strong(&done, &expect, 1)) {
		read_depth();
		atomic_store_explicit(&done, 2, memory_order_release);
	}
	while (atomic_load_explicit(&done, memory_order_acquire) != 2) { /* another thread reads it */ }
}

/* Captures before stack.c's constructor (another library's constructor may run first): the
 * loader installs the real malloc only once every initial object is relocated, and its object
 * lookup, used by the unwinder, has a slow path until it is set up, so a walk is safe from the
 * first call that reaches us. We also wait for libc's environ (the depth is read
 * from it) and for the loader's debug state to say consistent (not while it maps objects). */
static bool early_ok(void)
{
	if (atomic_load_explicit(&G.state, memory_order_acquire) != 2 || G.cfg.leaks == LEAKS_OFF) return false;
	if (!environ || _r_debug.r_state != RT_CONSISTENT) return false;
	depth_once();
	return true;
}

/* From the library's constructor, once initialised: costs nothing without CONTIG_LEAKS.
 * operator new's extent is known only from here on. */
void stack_init(void)
{
	if (G.cfg.leaks == LEAKS_OFF) return;
	capturing = 1;                  /* dlsym may allocate: those blocks take no stack */
	depth_once();
	find_operator_new();
	capturing = 0;
	atomic_store_explicit(&unwind_ready, 1, memory_order_release);
}

/* ---- the deduplicated table: open addressing on 32-bit ids, records in chunks by id ---- */
#define SLOT_BITS   21u                         /* 2M slots: at most half full, so 1M stacks */
#define SLOTS       (1u << SLOT_BITS)
#define MAX_STACKS  (SLOTS / 2)
#define CHUNK_BITS  12u                         /* records per chunk: 4096 */
#define NCHUNKS     (MAX_STACKS >> CHUNK_BITS)

typedef struct rec {
	uint64_t hash;                  /* of the frames */
	uint32_t n;                     /* frames */
	uint32_t unused;
	uintptr_t pc[];                 /* depth entries, n used */
} rec_t;

static _Atomic(uintptr_t) slots_map;            /* SLOTS ids (0: empty), taken on first use */
static _Atomic(uintptr_t) chunks[NCHUNKS];      /* rec_t arrays of 1 << CHUNK_BITS */
static _Atomic(uint32_t) next_id = 1;
static _Atomic(uint64_t) n_full;                /* captures dropped because the table was full */

static size_t rec_bytes(void) { return sizeof(rec_t) + depth * sizeof(uintptr_t); }

static rec_t *rec_of(uint32_t id)
{
	uintptr_t c = atomic_load_explicit(&chunks[id >> CHUNK_BITS], memory_order_acquire);
	return c ? (rec_t *)(c + (id & ((1u << CHUNK_BITS) - 1)) * rec_bytes()) : NULL;
}

/* Take where's memory (a chunk or the slot array) from meta_alloc once, so that the scan knows it
 * for the library's own; racing threads keep the winner's (the loser's is wasted: rare). */
static void *map_once(_Atomic(uintptr_t) *where, size_t len)
{
	uintptr_t cur = atomic_load_explicit(where, memory_order_acquire);
	if (cur) return (void *)cur;
	void *p = meta_alloc(len);
	if (!p) return NULL;
	uintptr_t expect = 0;
	if (atomic_compare_exchange_strong_explicit(where, &expect, (uintptr_t)p, memory_order_acq_rel,
	                                            memory_order_acquire))
		return p;
	return (void *)expect;
}

static uint64_t hash_frames(const uintptr_t *pc, unsigned n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	for (unsigned i = 0; i < n; i++) {
		h ^= pc[i];
		h *= 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	return h;
}

static uint32_t intern(const uintptr_t *pc, unsigned n)
{
	_Atomic(uint32_t) *slots = map_once(&slots_map, SLOTS * sizeof(uint32_t));
	if (!slots) return 0;
	uint64_t h = hash_frames(pc, n);
	uint32_t mine = 0;                      /* an id taken for this stack, not yet published */
	for (uint32_t i = (uint32_t)(h >> (64 - SLOT_BITS)), probes = 0; probes < SLOTS; i = (i + 1) & (SLOTS - 1), probes++) {
		uint32_t id = atomic_load_explicit(&slots[i], memory_order_acquire);
		if (!id) {
			if (!mine) {
				if (atomic_load_explicit(&next_id, memory_order_relaxed) >= MAX_STACKS ||
				    (mine = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed)) >= MAX_STACKS) {
					atomic_fetch_add(&n_full, 1);           /* full: no stack, id 0 */
					return 0;
				}
				if (!map_once(&chunks[mine >> CHUNK_BITS], rec_bytes() << CHUNK_BITS)) return 0;
				rec_t *r = rec_of(mine);
				r->hash = h;
				r->n = n;
				memcpy(r->pc, pc, n * sizeof *pc);
			}
			if (atomic_compare_exchange_strong_explicit(&slots[i], &id, mine, memory_order_release,
			                                            memory_order_acquire))
				return mine;
			/* lost the race for this slot: id now holds the winner; compare with it below */
		}
		rec_t *r = rec_of(id);
		if (r && r->hash == h && r->n == n && memcmp(r->pc, pc, n * sizeof *pc) == 0)
			return id;              /* (an id taken and not published is wasted: rare) */
	}
	return 0;
}

static void dwarf_walk(walk_t *w)
{
	_Unwind_Backtrace(walk_frame, w);
	if (!w->stopped && w->pend_pc) fc_learn(w->pend_pc, 0, 0, true);   /* the outermost frame */
}

void stack_finish(void) { atomic_store_explicit(&captures_over, 1, memory_order_release); }

/* A frame pointer of its own, so that the rbp its caller had is at [rbp] (the fast walk starts
 * from there). GCC only: elsewhere the walk starts with rbp unknown, and a frame-pointer frame
 * takes the DWARF walk as before. */
#if defined(__GNUC__) && !defined(__clang__)
#define CAPTURE_FP __attribute__((optimize("no-omit-frame-pointer")))
#define CALLER_RBP() (*(const uintptr_t *)__builtin_frame_address(0))
#else
#define CAPTURE_FP
#define CALLER_RBP() ((uintptr_t)0)
#endif
CAPTURE_FP uint32_t stack_capture(void)
{
	if (atomic_load_explicit(&captures_over, memory_order_relaxed)) return 0;
	if (capturing || (!atomic_load_explicit(&unwind_ready, memory_order_acquire) && !early_ok())) return 0;
	capturing = 1;
	fcache = map_once(&fcache_map, FC_SLOTS * sizeof *fcache);    /* the same pointer for all */
	uintptr_t pcs[STACK_DEPTH_MAX];
	walk_t w = { .pcs = pcs, .max = depth, .skipping = 1 };
	mark_low();
	if (!fast_walk(&w, (uintptr_t)__builtin_dwarf_cfa(), CALLER_RBP())) {
		memset(&w, 0, sizeof w);
		w.pcs = pcs;
		w.max = depth;
		w.skipping = 1;
		dwarf_walk(&w);
	} else if (stack_verify) {
		uintptr_t check[STACK_DEPTH_MAX];
		walk_t v = { .pcs = check, .max = depth, .skipping = 1 };
		dwarf_walk(&v);
		CONTIG_ASSERT(v.n == w.n && memcmp(check, pcs, w.n * sizeof *pcs) == 0);
	}
	uint32_t id = w.n ? intern(pcs, w.n) : 0;
	capturing = 0;
	return id;
}

unsigned stack_frames(uint32_t id, const uintptr_t **pcs)
{
	if (!id || id >= atomic_load_explicit(&next_id, memory_order_acquire)) return 0;
	rec_t *r = rec_of(id);
	if (!r || !r->n) return 0;
	*pcs = r->pc;
	return r->n;
}

size_t stack_count(void)
{
	uint32_t n = atomic_load_explicit(&next_id, memory_order_relaxed);
	return n > MAX_STACKS ? MAX_STACKS - 1 : n - 1;
}
