/* t-mmap.c PART - the mapping calls under the library.
 *   calls: interposed calls that would touch the heap are refused (MAP_FIXED over live blocks:
 *          ENOMEM, MAP_FIXED_NOREPLACE: EEXIST, munmap/mprotect/madvise of heap pages the
 *          caller does not own: -1) and the blocks keep their contents; a hint inside the range
 *          for a file or shared mapping is moved out; MAP_FIXED over free range pages is
 *          honoured and no block lands there until it is unmapped; the collisions are counted.
 *   semantics: private anonymous mappings served from the range behave as the kernel's: in
 *          range, page aligned, zero filled (also when reused), protection honoured, munmap
 *          whole/prefix/suffix/middle, mprotect, mremap grow in place/shrink/move, MAP_SHARED and
 *          file mappings outside the range, MAP_POPULATE, mmap64.
 *   remap: mremap keeps the protection (grown and moved), moves PROT_NONE mappings, touches no
 *          page when it moves, honours MREMAP_FIXED outside the range and MREMAP_DONTUNMAP;
 *          MADV_DONTFORK inside a heap block (on its first page or not) ends when the block is
 *          freed; read-only pages a realloc shrinks a block below serve later blocks writable.
 * Faults are checked in a forked child, which must die by SIGSEGV. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <malloc.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "contig.h"
#include "testutil.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#define PG 4096u

static int soft_failures;
/* A failed rule is reported and counted; the run goes on to check the others. */
#define SOFT(cond, ...) do { if (!(cond)) { fprintf(stderr, "FAIL: %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); soft_failures++; } } while (0)

static int in(const void *p, size_t len) { return tu_in_range((uintptr_t)p, len); }

/* 1 when touching p (a write if write, else a read) in a child kills it with SIGSEGV. */
static int faults(volatile char *p, int write)
{
	pid_t pid = fork();
	int st;
	CHECK(pid >= 0, "fork failed");
	if (pid == 0) {
		if (write)
			*p = 1;
		else
			(void)*p;
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid failed");
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}

static int same_bytes(const void *p, size_t len, unsigned char v)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < len; i++)
		if (c[i] != v)
			return 0;
	return 1;
}

static int all_zero(const void *p, size_t len)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < len; i++)
		if (c[i])
			return 0;
	return 1;
}

static size_t collisions_now(void)
{
	contig_stats_t st;
	TU_STATS(&st);
	return st.collisions;
}

static void *anon(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED, "mmap(%zu) failed: %s", len, strerror(errno));
	return p;
}

static void calls(void)
{
	size_t c0 = collisions_now();
	void *r;

	/* A large block: whole pages of it. */
	size_t blen = (size_t)512 << 10;
	char *big = malloc(blen);
	CHECK(big && in(big, blen), "malloc(%zu) = %p, not in the range", blen, (void *)big);
	tu_fill(big, blen, 1);
	char *bp = (char *)(((uintptr_t)big + PG - 1) & ~(uintptr_t)(PG - 1)) + 16 * PG;
	errno = 0;
	r = mmap(bp, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(r == MAP_FAILED && errno == ENOMEM, "mmap(MAP_FIXED) over a live block: %p, errno %d (want ENOMEM)", r, errno);
	errno = 0;
	r = mmap(bp, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(r == MAP_FAILED && errno == EEXIST, "mmap(MAP_FIXED_NOREPLACE) over a live block: %p, errno %d (want EEXIST)", r, errno);
	CHECK(tu_verify(big, blen, 1) < 0, "the block lost its contents to a fixed mapping");

	/* Small blocks share pages with others: the caller owns none of those pages. */
	char *small[64];
	for (int i = 0; i < 64; i++) {
		small[i] = malloc(200);
		CHECK(small[i] && in(small[i], 200), "malloc(200) not in the range");
		tu_fill(small[i], 200, 100 + (uint64_t)i);
	}
	char *sp = (char *)((uintptr_t)small[32] & ~(uintptr_t)(PG - 1));
	errno = 0;
	r = mmap(sp, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(r == MAP_FAILED && errno == ENOMEM, "mmap(MAP_FIXED) over small blocks: %p, errno %d", r, errno);
	CHECK(munmap(sp, PG) == -1, "munmap of heap pages the caller does not own succeeded");
	CHECK(mprotect(sp, PG, PROT_NONE) == -1, "mprotect(PROT_NONE) of heap pages the caller does not own succeeded");
	CHECK(munmap(big, blen) == -1, "munmap of a malloc'd block succeeded");
	CHECK(madvise(sp, PG, MADV_DONTNEED) == -1, "madvise(MADV_DONTNEED) of heap pages the caller does not own succeeded");
	errno = 0;
	r = mremap(big, blen, blen * 2, MREMAP_MAYMOVE);
	CHECK(r == MAP_FAILED, "mremap of a malloc'd block succeeded (%p)", r);
	for (int i = 0; i < 64; i++) {
		CHECK(tu_verify(small[i], 200, 100 + (uint64_t)i) < 0, "small block %d lost its contents", i);
		memset(small[i], 0x5a, 200);            /* still writable: would fault after PROT_NONE */
	}
	CHECK(tu_verify(big, blen, 1) < 0, "the large block lost its contents");
	memset(big, 1, blen);
	/* the heap keeps working */
	for (int i = 0; i < 1000; i++) {
		void *q = malloc(16 + (size_t)i * 37);
		CHECK(q && in(q, 16), "malloc after the refused calls failed");
		memset(q, 3, 16 + (size_t)i * 37);
		free(q);
	}
	CHECK(collisions_now() > c0, "the refused calls were not counted as collisions (%zu)", collisions_now());

	/* Range pages nobody mapped (far beyond the heap), and a served mapping's pages once it
	 * is unmapped: munmap does nothing there and says 0, as the kernel does for unmapped
	 * memory, mprotect says ENOMEM, and each is a collision (pages the caller does not own). */
	size_t c1 = collisions_now();
	char *far = (char *)(tu_base + tu_size / 2);
	CHECK(munmap(far, 2 * PG) == 0, "munmap of range pages nobody mapped failed: errno %d", errno);
	CHECK(collisions_now() == c1 + 1, "munmap of range pages nobody mapped: %zu collisions, want %zu",
	      collisions_now(), c1 + 1);
	errno = 0;
	CHECK(mprotect(far, PG, PROT_READ) == -1 && errno == ENOMEM,
	      "mprotect of range pages nobody mapped: errno %d (want ENOMEM)", errno);
	CHECK(collisions_now() == c1 + 2, "mprotect of range pages nobody mapped was not counted");
	char *gone = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(gone != MAP_FAILED && in(gone, 3 * PG), "mmap of 3 pages failed");
	CHECK(munmap(gone, 3 * PG) == 0, "munmap failed");
	CHECK(collisions_now() == c1 + 2, "munmap of the caller's own mapping was counted as a collision");
	CHECK(munmap(gone, 3 * PG) == 0, "a second munmap failed");
	CHECK(collisions_now() == c1 + 3, "a second munmap (pages no longer the caller's) was not counted");

	/* A hint inside the range for a file mapping, or a shared one, is moved out of the range. */
	char path[] = "/tmp/t-mmap.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0 && ftruncate(fd, 65536) == 0, "cannot make a temporary file");
	unlink(path);
	void *hint = (char *)tu_base + ((size_t)8 << 30);
	r = mmap(hint, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(r != MAP_FAILED && !in(r, 1), "file mapping with a hint in the range: %p", r);
	munmap(r, 65536);
	r = mmap(hint, 65536, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(r != MAP_FAILED && !in(r, 1), "private file mapping with a hint in the range: %p", r);
	munmap(r, 65536);
	r = mmap(hint, 65536, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(r != MAP_FAILED && !in(r, 1), "shared anonymous mapping with a hint in the range: %p", r);
	munmap(r, 65536);
	close(fd);

	/* A private anonymous mapping with a free hint outside the range gets that place (JITs
	 * such as LuaJIT need their code within 2 GiB of their binary); one with a taken hint, or
	 * none, comes from the range. The hint: 1 GiB below this program, checked free first. */
	char *near = (char *)(((uintptr_t)&collisions_now & ~(uintptr_t)0xffff) - ((size_t)1 << 30));
	long fr = syscall(SYS_mmap, near, 65536, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (fr == (long)near) {
		syscall(SYS_munmap, near, 65536);
		r = mmap(near, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(r == near, "mmap with a free hint %p outside the range: %p", (void *)near, r);
		((char *)r)[65535] = 1;
		r = mmap(near, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(r != MAP_FAILED && in(r, 65536), "mmap with a taken hint outside the range: %p, not in the range", r);
		munmap(r, 65536);
		munmap(near, 65536);
	} else
		printf("t-mmap: %p is taken here; hint case skipped\n", (void *)near);

	/* MAP_FIXED over free range pages: honoured; no block there until unmapped. */
	size_t flen = (size_t)4 << 20;
	char *hole = malloc(flen);
	CHECK(hole && in(hole, flen), "malloc(4 MiB) failed");
	free(hole);
	char *fx = (char *)(((uintptr_t)hole + 65535) & ~(uintptr_t)65535);
	size_t fxlen = (size_t)1 << 20;
	size_t c_fixed = collisions_now();
	r = mmap(fx, fxlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(r == fx, "mmap(MAP_FIXED) over free range pages: %p, errno %d (want %p)", r, errno, (void *)fx);
	CHECK(all_zero(fx, fxlen), "a fresh fixed mapping is not zero filled");
	tu_fill(fx, fxlen, 77);
	static void *keep[4000];
	for (int i = 0; i < 4000; i++) {
		size_t l = (i % 10 == 0) ? (size_t)300 << 10 : 64 + (size_t)(i * 131) % 20000;
		keep[i] = malloc(l);
		CHECK(keep[i] != NULL, "malloc(%zu) failed", l);
		CHECK((char *)keep[i] + l <= fx || (char *)keep[i] >= fx + fxlen,
		      "block %p+%zu lies in the caller's fixed mapping %p+%zu", keep[i], l, (void *)fx, fxlen);
		memset(keep[i], 9, l);
	}
	CHECK(tu_verify(fx, fxlen, 77) < 0, "the caller's fixed mapping lost its contents");
	/* SPEC: a fixed mapping over free range pages "is honoured: those pages become the
	 * caller's, and it is recorded" */
	SOFT(collisions_now() > c_fixed, "mmap(MAP_FIXED) over free range pages was not recorded as a collision");
	CHECK(munmap(fx, fxlen) == 0, "munmap of the caller's fixed mapping failed");
	for (int i = 0; i < 4000; i++)
		free(keep[i]);
	void *again = malloc(flen);
	CHECK(again && in(again, flen), "malloc(4 MiB) after the fixed mapping was unmapped failed");
	memset(again, 1, flen);
	free(again);

	/* MREMAP_FIXED into the range is refused. */
	char *m = anon(PG, PROT_READ | PROT_WRITE);
	size_t c_remap = collisions_now();
	r = mremap(m, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, (char *)tu_base + ((size_t)16 << 30));
	CHECK(r == MAP_FAILED, "mremap(MREMAP_FIXED) into the range succeeded (%p)", r);
	/* (it mapped nothing: not a collision, which CONTIG_ON_COLLISION=abort would end the run for) */
	SOFT(collisions_now() == c_remap, "a refused mremap(MREMAP_FIXED) was counted as a collision");
	munmap(m, PG);
	free(big);
	for (int i = 0; i < 64; i++)
		free(small[i]);
	printf("t-mmap calls: refused over the heap, honoured over free pages, %zu collisions counted\n",
	       collisions_now() - c0);
}

/* MAP_FIXED and MAP_FIXED_NOREPLACE mappings that reach past either end of the range: the
 * kernel maps them, and the library must follow (it walked page descriptors for the whole span,
 * past the end of its table: SIGSEGV). */
static void range_edges(void)
{
	const uintptr_t at[2] = { tu_base + tu_size - PG, tu_base - PG };
	const int how[2] = { MAP_FIXED, MAP_FIXED_NOREPLACE };
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 2; k++) {
			char *p = mmap((void *)at[i], 2 * PG, PROT_READ | PROT_WRITE,
			               MAP_PRIVATE | MAP_ANONYMOUS | how[k], -1, 0);
			SOFT(p == (char *)at[i], "mmap(%s) of 8 KiB at %#lx, across the range's %s, gave %p",
			     k ? "MAP_FIXED_NOREPLACE" : "MAP_FIXED", (unsigned long)at[i], i ? "start" : "end", (void *)p);
			if (p != (char *)at[i]) continue;
			p[0] = 1;
			p[2 * PG - 1] = 2;
			SOFT(p[0] == 1 && p[2 * PG - 1] == 2, "a mapping across the range's edge lost its bytes");
			SOFT(munmap(p, 2 * PG) == 0, "munmap of a mapping across the range's edge failed");
		}
}

/* Where the kernel's answer was not followed (an audit against the kernel): MAP_FIXED_NOREPLACE
 * into pages of a served mapping the caller unmapped (EEXIST; the kernel maps them); a mapping
 * made read-only by MAP_FIXED over itself and then grown in place (the new part came back
 * writable); protection bits beyond read, write and exec (the failed mprotect was ignored: a
 * writable mapping); munmap with a length that wraps and mprotect of an unaligned address (0 and
 * ENOMEM instead of EINVAL). */
static void kernel_answers(void)
{
	const int A = MAP_PRIVATE | MAP_ANONYMOUS;
	char *p = anon(16 * PG, PROT_READ | PROT_WRITE);
	SOFT(munmap(p + 8 * PG, 8 * PG) == 0, "munmap of a served mapping's back half failed");
	char *q = mmap(p + 8 * PG, 8 * PG, PROT_READ | PROT_WRITE, A | MAP_FIXED_NOREPLACE, -1, 0);
	SOFT(q == p + 8 * PG, "MAP_FIXED_NOREPLACE into pages the caller unmapped: %p (%s)", (void *)q,
	     q == MAP_FAILED ? strerror(errno) : "elsewhere");
	if (q != MAP_FAILED) { q[0] = 1; munmap(q, 8 * PG); }
	q = mmap(p + 4 * PG, 4 * PG, PROT_READ | PROT_WRITE, A | MAP_FIXED_NOREPLACE, -1, 0);
	SOFT(q == MAP_FAILED && errno == EEXIST, "MAP_FIXED_NOREPLACE over pages still mapped did not fail with EEXIST");
	munmap(p, 8 * PG);

	p = anon(4 * PG, PROT_READ | PROT_WRITE);
	SOFT(mmap(p, 4 * PG, PROT_READ, A | MAP_FIXED, -1, 0) == p, "MAP_FIXED read-only over the caller's own mapping failed");
	q = mremap(p, 4 * PG, 8 * PG, 0);
	if (q == p) {
		SOFT(faults(p + 6 * PG, 1), "a read-only mapping grown in place took writes in its new part");
		munmap(p, 8 * PG);
	} else {
		SOFT(q == MAP_FAILED && errno == ENOMEM, "mremap in place gave %p", (void *)q);
		munmap(p, 4 * PG);
	}

	p = mmap(NULL, 4 * PG, PROT_READ | 0x10, A, -1, 0);
	if (p != MAP_FAILED) {
		SOFT(faults(p, 1), "mmap(PROT_READ|0x10) gave writable memory");
		munmap(p, 4 * PG);
	}
	p = anon(4 * PG, PROT_READ | PROT_WRITE);
	errno = 0;
	SOFT(munmap(p + 2 * PG, (size_t)-4096) == -1 && errno == EINVAL, "munmap with a wrapping length did not fail with EINVAL");
	errno = 0;
	SOFT(mprotect(p + 1, PG, PROT_READ) == -1 && errno == EINVAL, "mprotect of an unaligned address: errno %d, not EINVAL", errno);
	munmap(p, 4 * PG);
}

/* SysV shared memory placed in the range (shmat with an address): refused over a live block (it
 * replaced the block's page: SHM_REMAP went through unseen); honoured over freed heap pages, which
 * malloc then leaves alone until shmdt gives them back; an address beyond the heap's pages works
 * as it does without the library (the reservation there made the kernel refuse it). */
static void sysv_shm(void)
{
	int id = shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0600);
	if (id < 0) { printf("t-mmap: no SysV shared memory here (%s): shm not checked\n", strerror(errno)); return; }
	char *p = malloc(100);
	CHECK(p != NULL, "malloc failed");
	strcpy(p, "precious");
	void *r = shmat(id, (void *)((uintptr_t)p & ~(uintptr_t)0xffff), SHM_REMAP);
	SOFT(r == (void *)-1 && errno == EINVAL, "shmat(SHM_REMAP) over a live block's page: %p", r);
	SOFT(strcmp(p, "precious") == 0, "shmat over a live block's page changed the block");
	char *big = malloc(8 << 20);
	CHECK(big != NULL, "malloc(8 MiB) failed");
	memset(big, 1, 8 << 20);
	char *want = (char *)((uintptr_t)big + (2 << 20));   /* (an address, kept before the free) */
	free(big);
	malloc_trim(0);
	char *b = shmat(id, want, 0);
	SOFT(b == want, "shmat at freed heap pages %p: %p (%s)", (void *)want, (void *)b, b == (void *)-1 ? strerror(errno) : "elsewhere");
	if (b == want) {
		memset(b, 0x5a, 1 << 20);
		static char *m[64];
		int hits = 0;
		for (int i = 0; i < 64; i++) {
			m[i] = malloc(1 << 20);
			hits += m[i] && m[i] < b + (1 << 20) && m[i] + (1 << 20) > b;
		}
		SOFT(hits == 0, "%d blocks handed out over an attached shm segment", hits);
		SOFT(b[0] == 0x5a && b[(1 << 20) - 1] == 0x5a, "the shm segment lost its bytes to the heap");
		for (int i = 0; i < 64; i++) free(m[i]);
		SOFT(shmdt(b) == 0, "shmdt failed: %s", strerror(errno));
	}
	char *far = (char *)(tu_base + tu_size / 2 + ((uintptr_t)1 << 30));
	char *e = shmat(id, far, 0);
	SOFT(e == far, "shmat at an address in the range beyond the heap: %p (%s)", (void *)e, e == (void *)-1 ? strerror(errno) : "elsewhere");
	if (e == far) SOFT(shmdt(e) == 0, "shmdt failed");
	shmctl(id, IPC_RMID, NULL);
	free(p);
}

static void semantics(void)
{
	range_edges();
	kernel_answers();
	sysv_shm();
	/* in range, aligned, zero filled, writable */
	size_t len = 100000;
	char *p = anon(len, PROT_READ | PROT_WRITE);
	CHECK(in(p, len), "mmap = %p is not in the range", (void *)p);
	CHECK(((uintptr_t)p & (PG - 1)) == 0, "mmap = %p is not page aligned", (void *)p);
	CHECK(all_zero(p, len), "a fresh mapping is not zero filled");
	tu_fill(p, len, 5);
	CHECK(munmap(p, len) == 0, "munmap failed");
	/* reuse: the same pages come back zeroed */
	for (int i = 0; i < 20; i++) {
		char *q = anon(len, PROT_READ | PROT_WRITE);
		CHECK(in(q, len) && all_zero(q, len), "a reused mapping %p is not zero filled", (void *)q);
		tu_fill(q, len, 6);
		CHECK(munmap(q, len) == 0, "munmap failed");
	}
	/* whole munmap: the pages are gone */
	p = anon(3 * 65536, PROT_READ | PROT_WRITE);
	memset(p, 1, 3 * 65536);
	CHECK(munmap(p, 3 * 65536) == 0, "munmap failed");
	SOFT(faults(p + 65536, 0), "reading a wholly unmapped mapping did not fault");

	/* mprotect over a hole the caller unmapped fails as the kernel's does, and the hole stays
	 * unmapped (the range keeps the pages reserved, so the kernel alone would say yes): whole
	 * 64 KiB pages in the middle, and 4 KiB pages inside one */
	for (int sub = 0; sub < 2; sub++) {
		size_t whole = 4 * 65536, hole = sub ? 2 * PG : 2 * 65536, at = sub ? 65536 + PG : 65536;
		char *m = anon(whole, PROT_READ | PROT_WRITE);
		memset(m, 3, whole);
		CHECK(munmap(m + at, hole) == 0, "munmap of a hole failed");
		errno = 0;
		int r = mprotect(m, whole, PROT_READ | PROT_WRITE);
		CHECK(r == -1 && errno == ENOMEM, "mprotect over an unmapped hole: %d, errno %d (want -1, ENOMEM)", r, errno);
		SOFT(faults(m + at, 0), "the hole became readable after mprotect");
		errno = 0;
		r = madvise(m, whole, MADV_DONTNEED);
		CHECK(r == -1 && errno == ENOMEM, "madvise over an unmapped hole: %d, errno %d (want -1, ENOMEM)", r, errno);
		CHECK(mprotect(m, at, PROT_READ) == 0, "mprotect of the part before the hole failed");
		CHECK(munmap(m, whole) == 0, "munmap failed");
	}

	/* the kernel's argument checks: an offset not page aligned (anonymous or not), and a copy
	 * (old size 0) of a private mapping */
	errno = 0;
	void *bad = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 1);
	CHECK(bad == MAP_FAILED && errno == EINVAL, "mmap with offset 1: %p, errno %d (want EINVAL)", bad, errno);
	char *pm = anon(8192, PROT_READ | PROT_WRITE);
	errno = 0;
	bad = mremap(pm, 0, 8192, MREMAP_MAYMOVE);
	CHECK(bad == MAP_FAILED && errno == EINVAL, "mremap(p, 0, ...) of a private mapping: %p, errno %d (want EINVAL)",
	      bad, errno);
	CHECK(munmap(pm, 8192) == 0, "munmap failed");

	/* the requested protection */
	char *ro = anon(65536, PROT_READ);
	CHECK(in(ro, 65536) && all_zero(ro, 65536), "PROT_READ mapping %p not in range or not zero", (void *)ro);
	SOFT(faults(ro + 100, 1), "writing a PROT_READ mapping did not fault");
	SOFT(!faults(ro + 100, 0), "reading a PROT_READ mapping faulted");
	CHECK(mprotect(ro, 65536, PROT_READ | PROT_WRITE) == 0, "mprotect(RW) of my mapping failed");
	ro[100] = 1;
	CHECK(mprotect(ro, PG, PROT_NONE) == 0, "mprotect(PROT_NONE) of my mapping failed");
	SOFT(faults(ro, 0), "reading a PROT_NONE page did not fault");
	SOFT(!faults(ro + PG, 1), "writing the next page faulted");
	CHECK(munmap(ro, 65536) == 0, "munmap failed");

	/* partial munmap: prefix, suffix, middle, inside one 64 KiB page and across pages */
	size_t ml = (size_t)1 << 20;
	char *m = anon(ml, PROT_READ | PROT_WRITE);
	tu_fill(m, ml, 8);
	CHECK(munmap(m, 2 * PG) == 0, "munmap prefix failed");
	SOFT(faults(m, 0) && faults(m + PG, 1), "the unmapped prefix is still accessible");
	CHECK(munmap(m + ml - 3 * PG, 3 * PG) == 0, "munmap suffix failed");
	SOFT(faults(m + ml - PG, 0), "the unmapped suffix is still accessible");
	CHECK(munmap(m + 300 * 1024, 5 * PG) == 0, "munmap middle failed");
	SOFT(faults(m + 300 * 1024 + 2 * PG, 0), "the unmapped middle is still accessible");
	/* what is left keeps its contents (checked against a fresh fill of the same seed) */
	{
		char *ref = malloc(ml);
		CHECK(ref != NULL, "malloc failed");
		tu_fill(ref, ml, 8);
		CHECK(memcmp(m + 2 * PG, ref + 2 * PG, 300 * 1024 - 2 * PG) == 0, "the mapping before the hole changed");
		CHECK(memcmp(m + 300 * 1024 + 5 * PG, ref + 300 * 1024 + 5 * PG, ml - 300 * 1024 - 8 * PG) == 0,
		      "the mapping after the hole changed");
		free(ref);
	}
	CHECK(munmap(m + 128 * 1024, 64 * 1024) == 0, "munmap of a whole 64 KiB page in the middle failed");
	SOFT(faults(m + 128 * 1024 + 100, 0), "an unmapped whole page in the middle is still accessible");
	CHECK(munmap(m, ml) == 0, "munmap of the rest failed");
	SOFT(faults(m + ml / 2 + 100, 0), "the rest is still accessible after munmap");
	/* a prefix spanning whole 64 KiB pages */
	m = anon(ml, PROT_READ | PROT_WRITE);
	memset(m, 2, ml);
	CHECK(munmap(m, 192 * 1024) == 0, "munmap of a 192 KiB prefix failed");
	SOFT(faults(m + 70000, 0), "a 192 KiB unmapped prefix is still accessible");
	CHECK(munmap(m + 512 * 1024, ml - 512 * 1024) == 0, "munmap of a 512 KiB suffix failed");
	SOFT(faults(m + 700000, 0), "a 512 KiB unmapped suffix is still accessible");
	CHECK(m[300000] == 2, "the middle lost its contents");
	CHECK(munmap(m, ml) == 0, "munmap of the rest failed");

	/* mremap: grow in place at the top, shrink, move */
	char *a = anon(256 * 1024, PROT_READ | PROT_WRITE);
	tu_fill(a, 256 * 1024, 9);
	char *g = mremap(a, 256 * 1024, 1024 * 1024, 0);
	CHECK(g == a, "mremap grow in place (no MREMAP_MAYMOVE) failed: %p, errno %d", (void *)g, errno);
	CHECK(tu_verify(a, 256 * 1024, 9) < 0, "mremap grow lost the contents");
	CHECK(all_zero(a + 256 * 1024, 768 * 1024), "the grown part is not zero filled");
	memset(a + 256 * 1024, 4, 768 * 1024);
	char *s = mremap(a, 1024 * 1024, 128 * 1024, 0);
	CHECK(s == a && tu_verify(a, 128 * 1024, 9) < 0, "mremap shrink failed or lost contents");
	SOFT(faults(a + 600 * 1024, 0), "the part given up by mremap shrink is still accessible");
	char *blocker = anon(64 * 1024, PROT_READ | PROT_WRITE);     /* likely right after a */
	char *mv = mremap(a, 128 * 1024, 4 * 1024 * 1024, MREMAP_MAYMOVE);
	CHECK(mv != MAP_FAILED && in(mv, 4 * 1024 * 1024), "mremap(MREMAP_MAYMOVE) failed or left the range: %p", (void *)mv);
	CHECK(tu_verify(mv, 128 * 1024, 9) < 0, "mremap move lost the contents");
	mv[4 * 1024 * 1024 - 1] = 1;
	if (mv != a)
		SOFT(faults(a, 0), "the old place of a moved mapping is still accessible");
	CHECK(munmap(mv, 4 * 1024 * 1024) == 0 && munmap(blocker, 64 * 1024) == 0, "munmap failed");

	/* MAP_SHARED and file mappings: outside the range, and shared really is shared */
	int *sh = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED && !in(sh, 1), "MAP_SHARED mapping %p is inside the range", (void *)sh);
	pid_t pid = fork();
	if (pid == 0) { sh[0] = 4242; _exit(0); }
	waitpid(pid, NULL, 0);
	CHECK(sh[0] == 4242, "MAP_SHARED is not shared with a child");
	munmap(sh, PG);
	int fd = open("/proc/self/exe", O_RDONLY);
	void *f = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(f != MAP_FAILED && !in(f, 1) && memcmp(f, "\177ELF", 4) == 0, "file mapping %p bad or inside the range", f);
	munmap(f, PG);
	close(fd);
	/* PROT_NONE reservations go to the kernel with CONTIG_MMAP=1 */
	void *pn = mmap(NULL, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(pn != MAP_FAILED && !in(pn, 1), "a PROT_NONE reservation %p was served from the range", pn);
	munmap(pn, 1 << 20);

	/* MAP_POPULATE: resident at once, still zero */
	size_t pl = (size_t)4 << 20;
	char *pp = mmap(NULL, pl, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	CHECK(pp != MAP_FAILED && in(pp, pl), "MAP_POPULATE mapping %p failed or outside the range", (void *)pp);
	unsigned char vec[1024];
	CHECK(mincore(pp, pl, vec) == 0, "mincore failed");
	size_t res = 0;
	for (size_t i = 0; i < pl / PG; i++)
		res += vec[i] & 1;
	CHECK(res == pl / PG, "MAP_POPULATE: only %zu of %zu pages resident", res, pl / PG);
	CHECK(all_zero(pp, pl), "a MAP_POPULATE mapping is not zero filled");
	munmap(pp, pl);

	/* mmap64 is served too */
	void *(*m64)(void *, size_t, int, int, int, off_t) =
		(void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_DEFAULT, "mmap64");
	if (m64) {
		char *q = m64(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(q != MAP_FAILED && in(q, 65536) && all_zero(q, 65536), "mmap64 = %p not served from the range", (void *)q);
		munmap(q, 65536);
	}
	/* A fixed mapping in the rest of a small served mapping's 64 KiB page, or over a hole the
	 * caller unmapped in one, is the caller's: unmapping the served part leaves it alone, and
	 * unmapping it takes it away (the library used to put PROT_NONE over the first, and to
	 * clip the second to nothing). */
	{
		char *sm = anon(PG, PROT_READ | PROT_WRITE);
		char *sf = mmap(sm + PG, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		CHECK(sf == sm + PG, "mmap(MAP_FIXED) past a served page: %p", (void *)sf);
		memcpy(sf, "mine", 5);
		CHECK(munmap(sm, PG) == 0, "munmap of the served page failed");
		SOFT(!faults(sf, 0) && memcmp(sf, "mine", 5) == 0, "unmapping a served page took the fixed mapping after it");
		char *m2 = anon(PG, PROT_READ | PROT_WRITE);
		int sfd = open("/proc/self/exe", O_RDONLY);
		CHECK(sfd >= 0, "open /proc/self/exe");
		char *sg = mmap(m2 + 2 * PG, PG, PROT_READ, MAP_PRIVATE | MAP_FIXED, sfd, 0);
		CHECK(sg == m2 + 2 * PG, "file mmap(MAP_FIXED) past a served page: %p", (void *)sg);
		close(sfd);
		SOFT(faults(m2 + PG, 0), "the gap between a served page and a fixed mapping past it can be read");
		CHECK(munmap(sg, PG) == 0, "munmap of the fixed file mapping failed");
		SOFT(faults(sg, 0), "munmap of a fixed file mapping past a served page left it mapped");
		memcpy(m2, "m2", 3);
		char *m3 = anon(3 * PG, PROT_READ | PROT_WRITE);
		CHECK(munmap(m3 + PG, PG) == 0, "munmap of a middle page failed");
		char *h = mmap(m3 + PG, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		CHECK(h == m3 + PG, "mmap(MAP_FIXED) over a hole: %p", (void *)h);
		memcpy(h, "hole", 5);
		munmap(m3, PG);
		munmap(m3 + 2 * PG, PG);
		SOFT(!faults(h, 0) && memcmp(h, "hole", 5) == 0, "unmapping the rest of a served mapping took a fixed mapping over its hole");
		munmap(h, PG);
		munmap(sf, PG);
		munmap(m2, PG);
	}
	if (soft_failures == 0)
		printf("t-mmap semantics: all as the kernel would\n");
}

/* Resident 4 KiB pages of [p, p+len). */
static size_t resident(const void *p, size_t len)
{
	static unsigned char vec[1 << 16];
	size_t n = 0;
	CHECK(len / PG <= sizeof vec && mincore((void *)p, len, vec) == 0, "mincore failed");
	for (size_t i = 0; i < len / PG; i++)
		n += vec[i] & 1;
	return n;
}

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

/* mremap of served mappings keeps what the kernel keeps: the protection (grown part and moved
 * mapping), a PROT_NONE mapping moves without a fault, a move touches no page, MREMAP_FIXED
 * outside the range moves there, MREMAP_DONTUNMAP moves or fails as the kernel does; and lasting
 * madvise advice on a heap block ends with the block. */
static void remap(void)
{
	/* a read-only mapping grown in place: the new part is read-only too */
	char *r = anon(PG, PROT_READ);
	CHECK(in(r, PG), "mapping %p not served from the range", (void *)r);
	char *g = mremap(r, PG, 16 * PG, 0);
	CHECK(g == r, "mremap grow in place of a read-only mapping failed: errno %d", errno);
	SOFT(faults(g + 8 * PG, 1), "the grown part of a PROT_READ mapping is writable");
	SOFT(!faults(g + 8 * PG, 0), "the grown part of a PROT_READ mapping is not readable");
	/* ... and moved: still read-only */
	char *blocker = mmap(g + 16 * PG, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	char *mv = mremap(g, 16 * PG, 64 * PG, MREMAP_MAYMOVE);
	CHECK(mv != MAP_FAILED, "mremap move of a read-only mapping failed: errno %d", errno);
	SOFT(faults(mv, 1) && faults(mv + 40 * PG, 1), "a moved PROT_READ mapping is writable");
	munmap(mv, 64 * PG);
	if (blocker != MAP_FAILED) munmap(blocker, PG);

	/* made PROT_NONE by mprotect, then moved: no fault in the library, contents kept */
	char *pn = anon(16 * PG, PROT_READ | PROT_WRITE);      /* 64 KiB: the next page is another */
	pn[0] = 42;
	pn[PG + 7] = 43;
	CHECK(mprotect(pn, 16 * PG, PROT_NONE) == 0, "mprotect PROT_NONE failed");
	blocker = mmap(pn + 16 * PG, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	char *pm = mremap(pn, 16 * PG, 40 * PG, MREMAP_MAYMOVE);
	CHECK(pm != MAP_FAILED, "mremap move of a PROT_NONE mapping failed: errno %d", errno);
	SOFT(faults(pm, 0), "a moved PROT_NONE mapping is readable");
	CHECK(mprotect(pm, 40 * PG, PROT_READ | PROT_WRITE) == 0, "mprotect back failed");
	CHECK(pm[0] == 42 && pm[PG + 7] == 43, "a moved PROT_NONE mapping lost its contents");
	CHECK(all_zero(pm + 16 * PG, 24 * PG), "the grown part of a moved mapping is not zero");
	munmap(pm, 40 * PG);
	if (blocker != MAP_FAILED) munmap(blocker, PG);

	/* a 64 MiB mapping with two touched pages, moved: only those pages are resident after */
	size_t big = (size_t)64 << 20;
	char *b = anon(big, PROT_READ | PROT_WRITE);
	b[0] = 1;
	b[big - 1] = 2;
	blocker = mmap(b + big, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	char *bm = mremap(b, big, big + (1 << 20), MREMAP_MAYMOVE);
	CHECK(bm != MAP_FAILED && in(bm, big), "mremap move of 64 MiB failed or left the range");
	CHECK(bm[0] == 1 && bm[big - 1] == 2, "the moved 64 MiB mapping lost its contents");
	size_t res = resident(bm, big + (1 << 20));
	SOFT(res <= 16, "moving a 64 MiB mapping with 2 touched pages made %zu pages resident", res);
	munmap(bm, big + (1 << 20));
	if (blocker != MAP_FAILED) munmap(blocker, PG);

	/* a mapping the kernel holds as two of its own (MADV_DONTFORK on half, or growth that it
	 * did not merge): the kernel moves one at a time, so the move goes part by part */
	char *two = anon(256 * 1024, PROT_READ | PROT_WRITE);
	memset(two, 3, 256 * 1024);
	CHECK(madvise(two, 128 * 1024, MADV_DONTFORK) == 0, "madvise(MADV_DONTFORK) failed");
	blocker = mmap(two + 256 * 1024, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	char *tm = mremap(two, 256 * 1024, 1024 * 1024, MREMAP_MAYMOVE);
	CHECK(tm != MAP_FAILED, "mremap move of a mapping in two kernel mappings failed: errno %d", errno);
	CHECK(same_bytes(tm, 256 * 1024, 3) && all_zero(tm + 256 * 1024, 768 * 1024),
	      "a mapping moved in parts lost its contents");
	munmap(tm, 1024 * 1024);
	if (blocker != MAP_FAILED) munmap(blocker, PG);

	/* MREMAP_FIXED to a place outside the range: moved there */
	char *src = anon(4 * PG, PROT_READ | PROT_WRITE);
	memset(src, 9, 4 * PG);
	char *dst = mmap(NULL, 4 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(dst != MAP_FAILED && !in(dst, 1), "no place outside the range");
	char *fx = mremap(src, 4 * PG, 4 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	CHECK(fx == dst, "mremap(MREMAP_FIXED, %p) returned %p", (void *)dst, (void *)fx);
	CHECK(dst[0] == 9 && dst[4 * PG - 1] == 9, "MREMAP_FIXED: the contents did not move");
	SOFT(faults(src, 0), "MREMAP_FIXED: the old place is still accessible");
	munmap(dst, 4 * PG);

	/* MREMAP_DONTUNMAP: the kernel's answer for a mapping of its own decides what is right */
	char *k = mmap(NULL, 4 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);   /* not served */
	CHECK(k != MAP_FAILED && !in(k, 1) && mprotect(k, 4 * PG, PROT_READ | PROT_WRITE) == 0, "kernel mapping");
	memset(k, 5, 4 * PG);
	char *kq = mremap(k, 4 * PG, 4 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
	char *d = anon(4 * PG, PROT_READ | PROT_WRITE);
	memset(d, 5, 4 * PG);
	errno = 0;
	char *dq = mremap(d, 4 * PG, 4 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
	if (kq == MAP_FAILED)
		SOFT(dq == MAP_FAILED, "MREMAP_DONTUNMAP: the kernel refuses it here, the library gave %p", (void *)dq);
	else {
		CHECK(dq != MAP_FAILED, "MREMAP_DONTUNMAP failed (errno %d) where the kernel does it", errno);
		SOFT(dq != d && dq[0] == 5 && d[0] == 0, "MREMAP_DONTUNMAP: moved=%d new[0]=%d old[0]=%d",
		     dq != d, dq[0], d[0]);
	}

	/* MADV_DONTFORK on part of a large heap block, then free: the pages serve later blocks,
	 * which a forked child must see */
	char *hb = malloc((size_t)4 << 20);
	char *al = (char *)(((uintptr_t)hb + PG - 1) & ~(uintptr_t)(PG - 1));
	CHECK(madvise(al, 1 << 20, MADV_DONTFORK) == 0, "madvise(MADV_DONTFORK) inside a block failed: errno %d", errno);
	free(hb);
	/* the same on pages well inside a block only, away from its first page */
	char *hb2 = malloc((size_t)4 << 20);
	char *al2 = (char *)(((uintptr_t)hb2 + (2 << 20)) & ~(uintptr_t)(PG - 1));
	CHECK(madvise(al2, 1 << 20, MADV_DONTFORK) == 0, "madvise(MADV_DONTFORK) inside a block failed: errno %d", errno);
	free(hb2);
	/* and a block shrunk by realloc below pages the caller made read-only: those pages serve
	 * the blocks below writable again (the memsets would fault) */
	char *hb3 = malloc((size_t)4 << 20);
	char *al3 = (char *)(((uintptr_t)hb3 + (3 << 20)) & ~(uintptr_t)(PG - 1));
	CHECK(mprotect(al3, 256 << 10, PROT_READ) == 0, "mprotect inside a block failed: errno %d", errno);
	uintptr_t hb3a = (uintptr_t)hb3;
	char *hb3s = realloc(hb3, 1 << 20);
	CHECK(hb3s != NULL, "realloc shrink failed");
	enum { K3 = 8 };
	static char *reuse3[K3];
	int covered = (uintptr_t)hb3s != hb3a;   /* moved: the whole block was freed, not shrunk */
	for (int i = 0; i < K3; i++) {
		reuse3[i] = malloc((size_t)5 << 19);   /* 2.5 MiB: fits the 3 MiB the shrink gave back */
		CHECK(reuse3[i] != NULL, "malloc failed");
		memset(reuse3[i], 9, (size_t)5 << 19);
		covered |= al3 >= reuse3[i] && al3 < reuse3[i] + (5 << 19);
	}
	SOFT(covered, "no block reused the shrunk block's tail (the read-only pages were not tested)");
	for (int i = 0; i < K3; i++)
		free(reuse3[i]);
	enum { K = 200 };
	static char *blk[K];
	for (int i = 0; i < K; i++) {
		blk[i] = malloc(100000);
		memset(blk[i], 7, 100000);
	}
	pid_t pid = fork();
	CHECK(pid >= 0, "fork failed");
	if (pid == 0) {
		for (int i = 0; i < K; i++)
			for (int j = 0; j < 100000; j += 512)
				if (blk[i][j] != 7) _exit(1);
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid failed");
	SOFT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "after MADV_DONTFORK on a freed block, a child's heap %s",
	     WIFSIGNALED(st) ? "faults" : "reads wrong");
	for (int i = 0; i < K; i++)
		free(blk[i]);
	free(hb3s);
	if (soft_failures == 0)
		printf("t-mmap remap: all as the kernel would\n");
}

int main(int argc, char **argv)
{
	tu_init();
	if (argc > 1 && strcmp(argv[1], "calls") == 0)
		calls();
	else if (argc > 1 && strcmp(argv[1], "semantics") == 0)
		semantics();
	else if (argc > 1 && strcmp(argv[1], "remap") == 0)
		remap();
	else {
		fprintf(stderr, "usage: t-mmap calls|semantics|remap\n");
		return 2;
	}
	return soft_failures ? 1 : 0;
}
