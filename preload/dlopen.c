/* dlopen.c - dlopen without RTLD_DEEPBIND, so that every library's malloc calls reach the library.
 *
 * A library opened with RTLD_DEEPBIND looks its symbols up in itself and its own dependencies
 * before the global scope: its malloc and free bind to libc's, not to the preloaded ones. Its
 * frees of the program's blocks then reach glibc's free, which crashes on them (PHP opens every
 * extension this way; under jemalloc, mimalloc and tcmalloc alike `php -r 1` dies in glibc's
 * _int_free). This dlopen drops the flag and hands the call to the next dlopen (libc's), so the
 * library binds to the global scope, where the malloc family is the library's.
 *
 * Which object called dlopen matters to glibc: the caller's namespace and its DT_RUNPATH decide
 * where a bare name is searched. A wrapper that called the next dlopen would make libcontig the
 * caller; this one jumps to it with the caller's return address still on the stack, which only
 * assembly guarantees at every optimisation level. So it is built for x86-64 alone; elsewhere
 * dlopen is not interposed and RTLD_DEEPBIND keeps its meaning (README, Limitations). */
#include "config.h"
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include "fmt.h"

#if defined(__x86_64__) && defined(RTLD_DEEPBIND)

#define STR_(x) #x
#define STR(x) STR_(x)

/* libc's dlopen, found once (the trampoline reads it without a lock: a race finds the same). */
HIDDEN void *(*_Atomic contig_next_dlopen)(const char *, int);

/* Called by the trampoline before the first dlopen and before each one that asks RTLD_DEEPBIND:
 * finds the next dlopen, and returns the mode to pass it. */
HIDDEN __attribute__((used)) int contig_dlopen_mode(const char *file, int mode);
int contig_dlopen_mode(const char *file, int mode)
{
	if (!atomic_load_explicit(&contig_next_dlopen, memory_order_acquire)) {
		void *f = dlsym(RTLD_NEXT, "dlopen");
		if (!f) fatal_msg("dlopen", "no dlopen after libcontig's");
		atomic_store_explicit(&contig_next_dlopen, (void *(*)(const char *, int))f, memory_order_release);
	}
	if (mode & RTLD_DEEPBIND) {
		mode &= ~RTLD_DEEPBIND;
		if (G.cfg.verbose) {
			char buf[320];
			fmtbuf_t b;
			fmt_init(&b, buf, sizeof buf);
			fmt_str(&b, "dlopen(");
			fmt_str(&b, file ? file : "NULL");
			fmt_str(&b, "): RTLD_DEEPBIND dropped, so that its malloc calls reach libcontig");
			log_verbose(buf);
		}
	}
	return mode;
}

/* dlopen(file, mode): straight to libc's when it is known and the mode has no RTLD_DEEPBIND;
 * otherwise contig_dlopen_mode first (the arguments kept on the stack, which stays aligned),
 * then the same jump with the mode it returned. */
__asm__(
	".text\n"
	".globl dlopen\n"
	".type dlopen, @function\n"
	".p2align 4\n"
	"dlopen:\n"
	"	.cfi_startproc\n"
	"	endbr64\n"
	"	movq contig_next_dlopen(%rip), %rax\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"
	"	testl $" STR(RTLD_DEEPBIND) ", %esi\n"
	"	jnz 1f\n"
	"	jmp *%rax\n"
	"1:	pushq %rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	pushq %rsi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	subq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call contig_dlopen_mode\n"
	"	addq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq %rsi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq %rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	movl %eax, %esi\n"
	"	jmp *contig_next_dlopen(%rip)\n"
	"	.cfi_endproc\n"
	".size dlopen, .-dlopen\n");

#endif
