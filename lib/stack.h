/* stack.h - allocation stacks for leak checking: capture and deduplicate (stack.c), symbolise and
 * format at report time (stack_sym.c). Used only while CONTIG_LEAKS is set; nothing here runs on
 * the plain fast paths. */
#ifndef CONTIG_STACK_H
#define CONTIG_STACK_H

/* What the callers (leak_records.c, leak.c, leak_report.c) can rely on:
 * - CONTIG_LEAKS_DEPTH (1..64, default 16) is read here, once, before the first capture; the
 *   callers need do nothing about it. Captures work from the first allocation that reaches us (a
 *   dependency's constructor that runs before ours is covered); until environ is set they return 0.
 * - Capture: a cache of per-pc frame sizes learned from libgcc's DWARF walk steps over known
 *   frames with two loads (~0.2 us a capture instead of ~2 us); any unknown or doubtful frame
 *   falls back to the DWARF walk, and --enable-debug checks every fast walk against it.
 * - Frames of libcontig itself and of libstdc++'s operator new family are skipped at capture, so
 *   frame #0 is the function that called malloc or new.
 * - stack_symbolize may start one addr2line child per module (raw clone, no SIGCHLD, clean
 *   environment, 10 s timeout per batch); call stack_symbolizer_stop() once the report is out.
 * - libcontig links libgcc_s (lib/Makefile.am: libcontig_core_la_LIBADD) for _Unwind_Backtrace. */

#include <stddef.h>
#include <stdint.h>

#define STACK_DEPTH_DEFAULT 16u       /* frames kept per allocation (CONTIG_LEAKS_DEPTH overrides) */
#define STACK_DEPTH_MAX     64u

/* Called once from the library's constructor after initialisation (init.c): with CONTIG_LEAKS set,
 * reads CONTIG_LEAKS_DEPTH and finds the C++ runtime's operator new, whose frames are skipped. */
__attribute__((visibility("hidden"))) void stack_init(void);

/* After the final leak check at exit: threads still running stop capturing stacks, so that no
 * unwinding runs while the process tears down the objects (libgcc_s, the loader's lists) it reads. */
__attribute__((visibility("hidden"))) void stack_finish(void);

/* Capture the caller's stack (skipping the library's own frames), intern it in the deduplicated
 * table and return its id; 0 means no stack could be recorded. Never allocates with malloc;
 * safe to call from the allocation slow path (recursion into malloc is guarded). */
__attribute__((visibility("hidden"))) uint32_t stack_capture(void);
/* The lowest stack address the captures of this thread reached since the last call (0: none
 * since), and forget it: leak_scrubbed clears the dead stack down to there. */
__attribute__((visibility("hidden"))) uintptr_t stack_capture_low(void);

/* The frames (return addresses, innermost first) of stack id; returns the depth, 0 for id 0. */
__attribute__((visibility("hidden"))) unsigned stack_frames(uint32_t id, const uintptr_t **pcs);

/* Distinct stacks recorded so far (ids 1..stack_count()). */
__attribute__((visibility("hidden"))) size_t stack_count(void);

/* End the symboliser children started by stack_symbolize (the next call starts them again). */
__attribute__((visibility("hidden"))) void stack_symbolizer_stop(void);

/* One symbolised frame. Strings are NUL-terminated; empty when unknown. */
#define STACK_INLINED 4u                /* inlined callers kept per frame */
typedef struct stack_inl {
	char func[256];                 /* a function the code at pc was inlined into */
	char file[256];                 /* where it makes the inlined call */
	unsigned line;
} stack_inl_t;

typedef struct stack_sym {
	char func[512];                 /* function name (demangled where possible; C++ template names run long) */
	char file[256];                 /* source file, when the module has debug info */
	unsigned line;                  /* 0 when unknown */
	char module[256];               /* path of the loaded object holding pc */
	uintptr_t offset;               /* pc - module load base */
	unsigned ninl;                  /* when func was inlined: the callers it went into, innermost
	                                   first (the last is the function the code belongs to) */
	stack_inl_t inl[STACK_INLINED];
} stack_sym_t;

/* Symbolise n program counters at once (batched: an external symboliser may be started once).
 * Called only at report time, never from malloc. Returns 0, or -1 if out is unusable. */
__attribute__((visibility("hidden"))) int stack_symbolize(const uintptr_t *pcs, size_t n, stack_sym_t *out);

/* Format one frame as SPEC.md's report wants:
 *   "    #I 0xPC in FUNC FILE:LINE"  or  "    #I 0xPC in FUNC (MODULE+0xOFF)"  or  "    #I 0xPC (MODULE+0xOFF)"
 * into buf (NUL-terminated, truncated to n). Returns the length. */
__attribute__((visibility("hidden"))) size_t stack_format(char *buf, size_t n, unsigned i, uintptr_t pc,
                                                          const stack_sym_t *s);

#endif
