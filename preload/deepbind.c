/* deepbind.c - libcontig-deepbind.so: dlopen without RTLD_DEEPBIND, preloaded beside libcontig.so
 * (LD_PRELOAD="libcontig.so libcontig-deepbind.so"; the contig launcher adds it by itself).
 *
 * A library opened with RTLD_DEEPBIND looks its symbols up in itself and its own dependencies
 * before the global scope: its malloc and free bind to libc's, not to the preloaded ones. Its
 * frees of the program's blocks then reach glibc's free, which crashes on them (PHP opens every
 * extension this way; under jemalloc, mimalloc and tcmalloc alike `php -r 1` dies in glibc's
 * _int_free). This dlopen drops the flag and hands the call to the next dlopen (libc's), so the
 * library binds to the global scope, where the malloc family is libcontig's. It is a library of
 * its own because libcontig.so exports exactly the malloc family, the mapping calls and the
 * contig_* API (SPEC.md); it needs nothing of libcontig's and works beside any allocator.
 *
 * Which object called dlopen matters to glibc: the caller's namespace and its DT_RUNPATH decide
 * where a bare name is searched. A wrapper that called the next dlopen would make this library
 * the caller; this one jumps to it with the caller's return address still on the stack, which
 * only assembly guarantees at every optimisation level. So it is built for x86-64 alone;
 * elsewhere the library exports nothing and RTLD_DEEPBIND keeps its meaning. */
#include "config.h"
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(RTLD_DEEPBIND)

#define STR_(x) #x
#define STR(x) STR_(x)
#define HIDDEN __attribute__((visibility("hidden")))

/* libc's dlopen, found once (the trampoline reads it without a lock: a race finds the same). */
HIDDEN void *(*_Atomic deepbind_next)(const char *, int);

/* Whether v is the word w, blanks around it allowed (config.c's is_word: this library has none
 * of libcontig's code). */
static int is_word(const char *v, const char *w)
{
	size_t n = strlen(w);
	while (*v == ' ' || *v == '\t') v++;
	if (strncmp(v, w, n) != 0) return 0;
	for (v += n; *v == ' ' || *v == '\t'; v++) {}
	return *v == 0;
}

/* CONTIG_VERBOSE as libcontig reads it: set, and not empty, 0, no, false or off. */
static int verbose(void)
{
	const char *v = getenv("CONTIG_VERBOSE");
	return v && !(is_word(v, "0") || is_word(v, "") || is_word(v, "no") || is_word(v, "false") ||
	              is_word(v, "off"));
}

/* One line, one write: "libcontig: dlopen(FILE): ..." (FILE cut to fit). */
static void say(const char *file)
{
	char buf[512];
	size_t n = 0;
	const char *parts[] = { "libcontig: dlopen(", file ? file : "NULL",
	                        "): RTLD_DEEPBIND dropped, so that its malloc calls reach libcontig\n" };
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		for (const char *c = parts[i]; *c && n < sizeof buf; c++) buf[n++] = *c;
	ssize_t w = write(2, buf, n);
	(void)w;
}

/* Called by the trampoline before the first dlopen and before each one that asks RTLD_DEEPBIND:
 * finds the next dlopen, and returns the mode to pass it. */
HIDDEN __attribute__((used)) int deepbind_mode(const char *file, int mode);
int deepbind_mode(const char *file, int mode)
{
	if (!atomic_load_explicit(&deepbind_next, memory_order_acquire)) {
		void *f = dlsym(RTLD_NEXT, "dlopen");
		if (!f) {
			static const char msg[] = "libcontig-deepbind: no dlopen after this library's\n";
			ssize_t w = write(2, msg, sizeof msg - 1);
			(void)w;
			abort();
		}
		atomic_store_explicit(&deepbind_next, (void *(*)(const char *, int))f, memory_order_release);
	}
	if (mode & RTLD_DEEPBIND) {
		mode &= ~RTLD_DEEPBIND;
		if (verbose()) say(file);
	}
	return mode;
}

/* dlopen(file, mode): straight to libc's when it is known and the mode has no RTLD_DEEPBIND;
 * otherwise deepbind_mode first (the arguments kept on the stack, which stays aligned), then
 * the same jump with the mode it returned. */
__asm__(
	".text\n"
	".globl dlopen\n"
	".type dlopen, @function\n"
	".p2align 4\n"
	"dlopen:\n"
	"	.cfi_startproc\n"
	"	endbr64\n"
	"	movq deepbind_next(%rip), %rax\n"
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
	"	call deepbind_mode\n"
	"	addq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq %rsi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq %rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	movl %eax, %esi\n"
	"	jmp *deepbind_next(%rip)\n"
	"	.cfi_endproc\n"
	".size dlopen, .-dlopen\n");

#endif
