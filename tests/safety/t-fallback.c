/* t-fallback.c system|none - run with a tiny range (CONTIG_SIZE=8M): allocate 64 MiB in 1 MiB
 * blocks, some small blocks once the range is full, and a 16 MiB anonymous mmap.
 *   system: everything succeeds, some blocks lie outside the range, all keep their contents,
 *           the statistics count fallback bytes; free works on both kinds; 10,000 fallback
 *           blocks live at once; realloc past the whole range moves the block outside it;
 *           posix_memalign, memalign and aligned_alloc up to 2 MiB alignment fall back too.
 *   fork:   (with CONTIG_FALLBACK=system) children forked while a thread looks fallback blocks up
 *           allocate and free fallback blocks without hanging.
 *   none:   allocations fail with NULL/ENOMEM (mmap with MAP_FAILED/ENOMEM) once the range is
 *           full, nothing lands outside it, and the program carries on: freeing makes room. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "contig.h"
#include "testutil.h"

#define NBIG 64
#define NSMALL 4000

/* fork: a thread keeps looking fallback blocks up (under the fallback table's lock) while the
 * main thread forks; each child allocates and frees fallback blocks: none may hang. */
static void *volatile fb_big;
static void *lookup_loop(void *arg)
{
	for (;;) (void)malloc_usable_size(fb_big);
	return arg;
}

static int fork_case(void)
{
	fb_big = malloc((size_t)32 << 20);        /* more than the whole range: served outside it */
	CHECK(fb_big != NULL && !tu_in_range((uintptr_t)fb_big, 1), "malloc(32 MiB) did not fall back: %p", fb_big);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, lookup_loop, NULL) == 0, "pthread_create failed");
	int hung = 0;
	for (int f = 0; f < 40; f++) {
		pid_t pid = fork();
		CHECK(pid >= 0, "fork failed");
		if (pid == 0) {
			alarm(10);
			void *volatile q = malloc((size_t)32 << 20);
			free(q);
			free(fb_big);
			_exit(q ? 0 : 3);
		}
		int st;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) hung++;
	}
	CHECK(hung == 0, "%d of 40 children hung or failed after fork with fallback blocks in use", hung);
	printf("t-fallback fork: 40 children allocated and freed fallback blocks\n");
	return 0;
}

int main(int argc, char **argv)
{
	static void *big[NBIG], *small[NSMALL];
	int sys = argc > 1 && strcmp(argv[1], "system") == 0;
	if (argc > 1 && strcmp(argv[1], "fork") == 0) {
		tu_init();
		return fork_case();
	}
	if (argc > 1 && strcmp(argv[1], "double-free") == 0) {
		/* a fallback block freed twice: "free(): invalid pointer" and SIGABRT, as in the
		 * range (its table entry was dropped at the first free, and the second was taken
		 * for a foreign pointer and ignored) */
		void (*volatile fr)(void *) = free;
		char *p = malloc((size_t)16 << 20);
		CHECK(p != NULL && !tu_in_range((uintptr_t)p, 1), "16 MiB not served outside an 8 MiB range");
		fr(p);
		printf("ptr %p\n", (void *)p);
		fflush(stdout);
		fr(p);
		return 0;
	}
	int in = 0, out = 0, failed = 0, sfail = 0, sout = 0;
	int (*get)(contig_stats_t *) = (int (*)(contig_stats_t *))dlsym(RTLD_DEFAULT, "contig_get_stats");
	contig_stats_t st;

	tu_init();
	CHECK(get != NULL, "contig_get_stats not found: is the library preloaded?");
	contig_stats_t st0;
	memset(&st0, 0, sizeof st0);
	st0.size = sizeof st0;
	CHECK(get(&st0) == 0, "contig_get_stats failed");
	for (int i = 0; i < NBIG; i++) {
		errno = 0;
		big[i] = malloc((size_t)1 << 20);
		if (!big[i]) {
			CHECK(errno == ENOMEM, "malloc failed with errno %d, not ENOMEM", errno);
			failed++;
			continue;
		}
		if (tu_in_range((uintptr_t)big[i], (size_t)1 << 20))
			in++;
		else
			out++;
		tu_fill(big[i], (size_t)1 << 20, (uint64_t)i);
	}
	for (int i = 0; i < NSMALL; i++) {
		errno = 0;
		small[i] = malloc(1000);
		if (!small[i]) {
			CHECK(errno == ENOMEM, "malloc(1000) failed with errno %d", errno);
			sfail++;
			continue;
		}
		sout += !tu_in_range((uintptr_t)small[i], 1000);
		memset(small[i], 7, 1000);
	}
	errno = 0;
	char *m = mmap(NULL, (size_t)16 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int merr = errno;
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	CHECK(get(&st) == 0, "contig_get_stats failed");
	printf("t-fallback %s: 1 MiB blocks: %d in the range, %d outside, %d refused; small: %d refused, %d outside; "
	       "mmap 16 MiB: %s; fallback bytes %zu\n", sys ? "system" : "none", in, out, failed, sfail, sout,
	       m == MAP_FAILED ? strerror(merr) : (tu_in_range((uintptr_t)m, 1) ? "in the range" : "outside"),
	       st.fallback_bytes);
	CHECK(in > 0, "no block was served from the range at all");
	if (sys) {
		CHECK(failed == 0 && sfail == 0, "CONTIG_FALLBACK=system: allocations failed");
		CHECK(out > 0, "CONTIG_FALLBACK=system: no block outside the 8 MiB range, yet 64 MiB were allocated");
		CHECK(m != MAP_FAILED, "CONTIG_FALLBACK=system: mmap(16 MiB) failed: %s", strerror(merr));
		memset(m, 1, (size_t)16 << 20);
		CHECK(st.fallback_bytes >= (size_t)out << 20, "fallback bytes %zu < %d MiB served outside",
		      st.fallback_bytes, out);
		/* every block counts as a malloc call, in the range or not (those outside did not) */
		CHECK(st.calls_malloc - st0.calls_malloc >= (uint64_t)(NBIG + NSMALL),
		      "%d mallocs counted as %llu calls", NBIG + NSMALL, (unsigned long long)(st.calls_malloc - st0.calls_malloc));
	} else {
		CHECK(out == 0 && sout == 0, "CONTIG_FALLBACK=none: %d blocks outside the range", out + sout);
		CHECK(failed > 0, "CONTIG_FALLBACK=none: 64 MiB fit in an 8 MiB range?");
		CHECK(m == MAP_FAILED && merr == ENOMEM, "CONTIG_FALLBACK=none: mmap(16 MiB) gave %p, errno %d (want ENOMEM)",
		      (void *)m, merr);
		CHECK(st.fallback_bytes == 0, "CONTIG_FALLBACK=none: fallback bytes %zu", st.fallback_bytes);
	}
	if (sys) {
		/* many live fallback blocks at once (a fixed table used to stop at 8191), each
		 * found again by free; errno untouched by a served block */
		enum { NMANY = 10000 };
		static char *many[NMANY];
		for (int i = 0; i < NMANY; i++) {
			errno = 0;
			many[i] = malloc(4000);
			CHECK(many[i] != NULL, "CONTIG_FALLBACK=system: fallback block %d of %d failed, errno %d", i, NMANY, errno);
			CHECK(errno == 0, "CONTIG_FALLBACK=system: a served malloc set errno to %d", errno);
			many[i][0] = (char)i;
			many[i][3999] = (char)(i >> 8);
		}
		for (int i = 0; i < NMANY; i++) {
			CHECK(many[i][0] == (char)i && many[i][3999] == (char)(i >> 8), "fallback block %d lost its contents", i);
			CHECK(malloc_usable_size(many[i]) >= 4000, "fallback block %d: usable size %zu",
			      i, malloc_usable_size(many[i]));
			free(many[i]);
		}
		/* realloc past the whole range: moves outside it, as malloc of that size does */
		char *r = malloc(1000);
		CHECK(r != NULL, "malloc(1000) failed");
		memset(r, 5, 1000);
		char *r2 = realloc(r, (size_t)32 << 20);
		CHECK(r2 != NULL, "CONTIG_FALLBACK=system: realloc(1000 B -> 32 MiB, past the 8 MiB range) failed, errno %d", errno);
		CHECK(r2[0] == 5 && r2[999] == 5, "realloc past the range lost the contents");
		r2[((size_t)32 << 20) - 1] = 1;
		free(r2);
		/* alignments above a page, with the range full: fallback blocks aligned as asked */
		static const size_t aligns[] = { 8192, (size_t)64 << 10, (size_t)1 << 20, (size_t)2 << 20 };
		for (size_t k = 0; k < sizeof aligns / sizeof aligns[0]; k++) {
			size_t al = aligns[k];
			void *pa = NULL;
			int rc = posix_memalign(&pa, al, 100000);
			CHECK(rc == 0 && pa != NULL, "CONTIG_FALLBACK=system: posix_memalign(%zu, 100000) failed: %d", al, rc);
			CHECK(((uintptr_t)pa & (al - 1)) == 0, "posix_memalign(%zu): %p is not aligned", al, pa);
			CHECK(!tu_in_range((uintptr_t)pa, 1), "posix_memalign(%zu): %p in the full range", al, pa);
			CHECK(malloc_usable_size(pa) >= 100000, "posix_memalign(%zu): usable size %zu", al, malloc_usable_size(pa));
			memset(pa, 9, 100000);
			void *pm = memalign(al, al);
			CHECK(pm != NULL && ((uintptr_t)pm & (al - 1)) == 0, "memalign(%zu, %zu): %p", al, al, pm);
			memset(pm, 3, al);
			void *pb = aligned_alloc(al, 3 * al);
			CHECK(pb != NULL && ((uintptr_t)pb & (al - 1)) == 0, "aligned_alloc(%zu): %p", al, pb);
			free(pb);
			free(pm);
			free(pa);
		}
	}
	if (m != MAP_FAILED)
		munmap(m, (size_t)16 << 20);
	for (int i = 0; i < NBIG; i++) {
		if (!big[i])
			continue;
		CHECK(tu_verify(big[i], (size_t)1 << 20, (uint64_t)i) < 0, "block %d lost its contents", i);
		free(big[i]);
	}
	for (int i = 0; i < NSMALL; i++)
		free(small[i]);
	/* room again */
	void *again = malloc((size_t)4 << 20);
	CHECK(again != NULL && tu_in_range((uintptr_t)again, (size_t)4 << 20), "after freeing, malloc(4 MiB) is %p", again);
	free(again);
	return 0;
}
