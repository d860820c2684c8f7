/* t-limit.c LIMIT_MIB - run with CONTIG_LIMIT: 1 MiB blocks, touched, until malloc fails. The
 * failure must come near the limit (not before three quarters of it, not past it plus a few
 * MiB), as NULL with ENOMEM, for malloc, calloc, realloc growth and anonymous mmap alike; the
 * program keeps running, freeing half makes room again, and the statistics count limit hits.
 * With LIMIT_MIB 0 ("touch until failure" mode for the cgroup test) it allocates until the first
 * failure, up to 8 GiB, then frees and exits 0: a NULL is what it hopes for, not the OOM killer.
 * "t-limit grow" (run with CONTIG_LIMIT=100M CONTIG_PURGE_MS=60000): 50 MiB and 40 MiB blocks,
 * the first freed (its pages dirty, still committed), then the second grown by realloc to 70 MiB
 * in place: it fits once the freed pages are given back, which must happen before the request
 * fails (SPEC), and no limit hit is counted for it. "t-limit aligned" (CONTIG_LIMIT=64M): blocks
 * with alignments of 16 to 64 MiB that fit under the limit are served (the padding a search for
 * an aligned place needs used to be counted as committed: aligned_alloc(64M, 16M) failed).
 * "t-limit giveback" (CONTIG_LIMIT=4M CONTIG_PURGE_MS=60000): one block in each of eight
 * one-page classes, all freed, leaves eight empty runs that the thread's heap keeps (the first
 * run of each class, which malloc serves from); a large block that fits only once four of them
 * go back must be served, with no limit hit counted (SPEC: what can be returned is, before a
 * request fails at the limit), and a request past the limit still fails, counted once.
 * "t-limit reserve" and "reserve-random": PROT_NONE reservations under CONTIG_MMAP=all (above
 * reserve() and reserve_random()). */
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "contig.h"
#include "testutil.h"

#define MIB ((size_t)1 << 20)
#define MAXB 8192

static int grow(void)
{
	char *a = malloc(50 * MIB), *b = malloc(40 * MIB);
	CHECK(a && b, "malloc of 50 and 40 MiB under a 100 MiB limit failed");
	memset(a, 1, 50 * MIB);
	memset(b, 2, 40 * MIB);
	free(a);
	errno = 0;
	char *r = realloc(b, 70 * MIB);
	CHECK(r != NULL, "realloc of 40 to 70 MiB with 40 MiB live under a 100 MiB limit: errno %d", errno);
	CHECK(r[40 * MIB - 1] == 2, "realloc lost the contents");
	memset(r, 3, 70 * MIB);
	contig_stats_t st;
	TU_STATS(&st);
	printf("t-limit grow: realloc 40 -> 70 MiB at %s, %zu limit hit(s)\n", r == b ? "the same address" : "a new address",
	       st.limit_hits);
	CHECK(st.limit_hits == 0, "a request that succeeded counted %zu limit hit(s)", st.limit_hits);
	free(r);
	return 0;
}

static int aligned(void)
{
	void *p = memalign(16 * MIB, 40 * MIB), *q = NULL;
	CHECK(p != NULL && ((uintptr_t)p & (16 * MIB - 1)) == 0, "memalign(16 MiB, 40 MiB) under a 64 MiB limit: %p", p);
	memset(p, 1, 40 * MIB);
	int rc = posix_memalign(&q, 32 * MIB, 8 * MIB);
	CHECK(rc == 0 && ((uintptr_t)q & (32 * MIB - 1)) == 0, "posix_memalign(32 MiB, 8 MiB) with 40 MiB live: %d", rc);
	memset(q, 1, 8 * MIB);
	free(p);
	free(q);
	void *r = aligned_alloc(64 * MIB, 16 * MIB);
	CHECK(r != NULL && ((uintptr_t)r & (64 * MIB - 1)) == 0, "aligned_alloc(64 MiB, 16 MiB) under a 64 MiB limit: %p", r);
	memset(r, 1, 16 * MIB);
	free(r);
	printf("t-limit aligned: 16, 32 and 64 MiB alignments served under a 64 MiB limit\n");
	return 0;
}

/* "t-limit reserve" (CONTIG_MMAP=all CONTIG_LIMIT=16M): a PROT_NONE reservation is address
 * space, not committed memory. A 256 MiB reservation is served from the range under a 16 MiB
 * limit; its pages count as committed only as mprotect or a fixed mapping over them makes them
 * accessible, where the limit applies (ENOMEM, a hit); a fixed PROT_NONE mapping over committed
 * pages (a runtime uncommitting) and munmap give them back. */
static size_t committed_mib(void)
{
	contig_stats_t st;
	TU_STATS(&st);
	return st.committed / MIB;
}

static int reserve(void)
{
	size_t c0 = committed_mib();
	char *r = mmap(NULL, 256 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(r != MAP_FAILED, "a 256 MiB PROT_NONE reservation under a 16 MiB limit failed: %s", strerror(errno));
	CHECK_RANGE(r, 256 * MIB, "the reservation");
	size_t c1 = committed_mib();
	CHECK(c1 <= c0 + 1, "the reservation counts as committed: %zu MiB before, %zu after", c0, c1);
	CHECK(mprotect(r, 8 * MIB, PROT_READ | PROT_WRITE) == 0, "mprotect of 8 MiB of it: %s", strerror(errno));
	memset(r, 1, 8 * MIB);
	size_t c2 = committed_mib();
	CHECK(c2 >= c1 + 8, "8 MiB made accessible and touched: committed %zu -> %zu MiB", c1, c2);
	char *f = mmap(r + 8 * MIB, 4 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(f == r + 8 * MIB, "a fixed mapping committing 4 MiB more of it: %s", strerror(errno));
	memset(f, 2, 4 * MIB);
	size_t c3 = committed_mib();
	CHECK(c3 >= c2 + 4, "4 MiB committed by a fixed mapping: committed %zu -> %zu MiB", c2, c3);
	errno = 0;
	int rc = mprotect(r + 12 * MIB, 8 * MIB, PROT_READ | PROT_WRITE);
	CHECK(rc == -1 && errno == ENOMEM, "8 MiB more with %zu MiB committed under a 16 MiB limit: rc %d, errno %d",
	      c3, rc, errno);
	errno = 0;
	f = mmap(r + 12 * MIB, 8 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(f == MAP_FAILED && errno == ENOMEM, "a fixed mapping of 8 MiB more past the limit: %p, errno %d",
	      (void *)f, errno);
	contig_stats_t st;
	TU_STATS(&st);
	CHECK(st.limit_hits == 2, "two requests refused at the limit counted %zu hit(s)", st.limit_hits);
	/* uncommit the first 8 MiB the way a runtime does, then the 8 MiB fit */
	f = mmap(r, 8 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	CHECK(f == r, "a fixed PROT_NONE mapping over committed pages: %s", strerror(errno));
	size_t c4 = committed_mib();
	CHECK(c4 + 8 <= c3, "8 MiB uncommitted: committed %zu -> %zu MiB", c3, c4);
	CHECK(mprotect(r + 12 * MIB, 8 * MIB, PROT_READ | PROT_WRITE) == 0, "8 MiB after the uncommit: %s",
	      strerror(errno));
	memset(r + 12 * MIB, 3, 8 * MIB);
	CHECK(r[8 * MIB] == 2 && r[20 * MIB - 1] == 3, "contents lost");
	CHECK(munmap(r, 256 * MIB) == 0, "munmap of the reservation: %s", strerror(errno));
	size_t c5 = committed_mib();
	CHECK(c5 <= c0 + 1, "unmapped: committed %zu MiB, %zu before the reservation", c5, c0);
	printf("t-limit reserve: committed %zu MiB, reserved 256 MiB: %zu; 8 accessible: %zu; +4 fixed: %zu; "
	       "8 uncommitted: %zu; unmapped: %zu\n", c0, c1, c2, c3, c4, c5);
	return 0;
}

/* "t-limit reserve-random [OPS [SEED]]" (CONTIG_MMAP=all, with or without a limit): random operations
 * on 16 reservations (PROT_NONE mmap, or read-write one time in four; mprotect to read-write and back; fixed read-write and
 * PROT_NONE mappings over parts; mremap growth; munmap), touching what is accessible. Committed
 * never falls below the 64 KiB pages that hold an accessible page, a refusal is only ever ENOMEM
 * at a limit, contents survive, and once everything is unmapped committed is where it started.
 * The bookkeeping is in static arrays: the loop allocates nothing (run it with CONTIG_PURGE_MS=0:
 * starting the purger thread allocates its thread-local storage, a heap block). */
#define RR_N 16
#define RR_PG 4096
#define RR_MAXPG 2048
static struct rr { char *p; size_t np; unsigned char acc[RR_MAXPG]; } rr[RR_N];
static uint64_t rr_state = 0x9e3779b97f4a7c15ull;

static void rr_check_contents(const struct rr *x, const char *when)
{
	for (size_t k = 0; k < x->np; k++)
		CHECK(!x->acc[k] || x->p[k * RR_PG] == (char)k, "%s: page %zu of a reservation lost its contents", when, k);
}

static int reserve_random(long ops)
{
	contig_stats_t st;
	size_t lim = 0;
	TU_STATS(&st);
	size_t c0 = st.committed;
	long refused = 0;
	if (getenv("CONTIG_LIMIT")) lim = st.limit;
	for (long n = 0; n < ops; n++) {
		if (n % 16 == 0) {
			size_t acc64 = 0;
			for (int j = 0; j < RR_N; j++)
				for (size_t k = 0; rr[j].p && k < rr[j].np; k += 16) {
					int any = 0;
					for (size_t m = k; m < k + 16 && m < rr[j].np; m++) any |= rr[j].acc[m];
					acc64 += (size_t)any;
				}
			TU_STATS(&st);
			CHECK(st.committed >= acc64 * 65536, "op %ld: committed %zu, below the %zu bytes of 64 KiB pages "
			      "made accessible", n, st.committed, acc64 * 65536);
			CHECK(!lim || st.committed <= lim, "op %ld: committed %zu past the limit %zu", n, st.committed, lim);
		}
		struct rr *x = &rr[tu_rand(&rr_state) % RR_N];
		unsigned op = (unsigned)(tu_rand(&rr_state) % 9);
		if (!x->p) {
			/* one in four a read-write mapping, committed from the start (within the limit) */
			bool rw = tu_rand(&rr_state) % 4 == 0;
			x->np = 1 + tu_rand(&rr_state) % 512;
			x->p = mmap(NULL, x->np * RR_PG, rw ? PROT_READ | PROT_WRITE : PROT_NONE,
			            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			memset(x->acc, 0, sizeof x->acc);
			if (x->p == MAP_FAILED) {
				CHECK(rw && errno == ENOMEM && lim, "op %ld: a %s mapping failed: %s", n,
				      rw ? "read-write" : "PROT_NONE", strerror(errno));
				x->p = NULL;
				refused++;
				continue;
			}
			CHECK_RANGE(x->p, x->np * RR_PG, "a reservation");
			for (size_t k = 0; rw && k < x->np; k++) { x->acc[k] = 1; x->p[k * RR_PG] = (char)k; }
			continue;
		}
		size_t a = tu_rand(&rr_state) % x->np, b = a + 1 + tu_rand(&rr_state) % (x->np - a);
		char *lo = x->p + a * RR_PG, *q;
		size_t len = (b - a) * RR_PG;
		switch (op) {
		case 0: case 1:                 /* commit by mprotect */
			if (mprotect(lo, len, PROT_READ | PROT_WRITE) != 0) {
				CHECK(errno == ENOMEM && lim, "op %ld: mprotect(RW) failed: %s", n, strerror(errno));
				refused++;
				break;
			}
			for (size_t k = a; k < b; k++) { x->acc[k] = 1; x->p[k * RR_PG] = (char)k; }
			break;
		case 2:                         /* PROT_NONE again (stays committed) */
			CHECK(mprotect(lo, len, PROT_NONE) == 0, "op %ld: mprotect(PROT_NONE) failed: %s", n, strerror(errno));
			for (size_t k = a; k < b; k++) x->acc[k] = 0;
			break;
		case 3: case 4:                 /* commit by a fixed mapping: fresh zero pages */
			q = mmap(lo, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			if (q == MAP_FAILED) {
				CHECK(errno == ENOMEM && lim, "op %ld: a fixed RW mapping failed: %s", n, strerror(errno));
				refused++;
				break;
			}
			for (size_t k = a; k < b; k++) {
				CHECK(x->p[k * RR_PG] == 0, "op %ld: a fixed mapping's page is not zero", n);
				x->acc[k] = 1;
				x->p[k * RR_PG] = (char)k;
			}
			break;
		case 5:                         /* uncommit by a fixed PROT_NONE mapping */
			q = mmap(lo, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
			CHECK(q == lo, "op %ld: a fixed PROT_NONE mapping failed: %s", n, strerror(errno));
			for (size_t k = a; k < b; k++) x->acc[k] = 0;
			break;
		case 6:
			rr_check_contents(x, "check");
			break;
		case 7: {                       /* grow, moving if need be; the new part is PROT_NONE */
			size_t nn = x->np + 1 + tu_rand(&rr_state) % 64;
			if (nn > RR_MAXPG) break;
			q = mremap(x->p, x->np * RR_PG, nn * RR_PG, MREMAP_MAYMOVE);
			if (q == MAP_FAILED) {
				CHECK(errno == ENOMEM && lim, "op %ld: mremap growth failed: %s", n, strerror(errno));
				refused++;
				break;
			}
			x->p = q;
			x->np = nn;
			rr_check_contents(x, "mremap");
			break;
		}
		default:
			rr_check_contents(x, "munmap");
			CHECK(munmap(x->p, x->np * RR_PG) == 0, "op %ld: munmap failed: %s", n, strerror(errno));
			x->p = NULL;
		}
	}
	for (int j = 0; j < RR_N; j++)
		if (rr[j].p) {
			rr_check_contents(&rr[j], "the end");
			CHECK(munmap(rr[j].p, rr[j].np * RR_PG) == 0, "munmap failed: %s", strerror(errno));
		}
	TU_STATS(&st);
	printf("t-limit reserve-random: %ld operations, %ld refused at the limit, committed peak %zu, %zu at the "
	       "start and %zu at the end\n", ops, refused, st.committed_peak, c0, st.committed);
	CHECK(st.committed == c0, "everything unmapped: committed %zu, %zu at the start", st.committed, c0);
	CHECK(st.mmap_bytes == 0, "everything unmapped: %zu bytes still served", st.mmap_bytes);
	return 0;
}

static int giveback(void)
{
	static const size_t sz[] = { 700, 1500, 2500, 3500, 5000, 7000, 9000, 12000 };
	enum { K = sizeof sz / sizeof sz[0] };
	void *p[K];
	for (int i = 0; i < K; i++) {
		p[i] = malloc(sz[i]);
		CHECK(p[i] != NULL, "malloc(%zu) under a 4 MiB limit failed", sz[i]);
		memset(p[i], i + 1, sz[i]);
	}
	for (int i = 0; i < K; i++) free(p[i]);
	contig_stats_t st;
	TU_STATS(&st);
	size_t held = st.committed, lim = st.limit, run = 64 << 10;
	CHECK(lim > held + 4 * run, "limit %zu, committed %zu: no room for the test", lim, held);
	size_t n = lim - held + 4 * run;            /* fits only when four runs go back */
	errno = 0;
	char *q = malloc(n);
	CHECK(q != NULL, "malloc(%zu) with %zu committed, eight empty runs kept, under a %zu limit: errno %d",
	      n, held, lim, errno);
	memset(q, 1, n);
	TU_STATS(&st);
	CHECK(st.limit_hits == 0, "a request served after the heap gave back counted %zu limit hit(s)", st.limit_hits);
	CHECK(st.committed <= lim, "committed %zu past the limit %zu", st.committed, lim);
	free(q);
	errno = 0;
	q = malloc(lim + run);
	CHECK(q == NULL && errno == ENOMEM, "malloc(%zu) past a %zu limit: %p, errno %d", lim + run, lim, (void *)q, errno);
	TU_STATS(&st);
	CHECK(st.limit_hits == 1, "one refused request counted %zu limit hits", st.limit_hits);
	printf("t-limit giveback: %zu bytes served with %zu committed of %zu (empty runs given back), "
	       "one refusal counted once\n", n, held, lim);
	return 0;
}

int main(int argc, char **argv)
{
	static char *blk[MAXB];
	size_t lim = argc > 1 ? (size_t)atol(argv[1]) : 64;
	int n = 0;

	tu_init();
	if (argc > 1 && strcmp(argv[1], "grow") == 0) return grow();
	if (argc > 1 && strcmp(argv[1], "aligned") == 0) return aligned();
	if (argc > 1 && strcmp(argv[1], "giveback") == 0) return giveback();
	if (argc > 1 && strcmp(argv[1], "reserve") == 0) return reserve();
	if (argc > 1 && strcmp(argv[1], "reserve-random") == 0) {
		if (argc > 3) rr_state = strtoull(argv[3], NULL, 0) | 1;      /* another sequence */
		return reserve_random(argc > 2 ? atol(argv[2]) : 20000);
	}
	for (; n < MAXB; n++) {
		errno = 0;
		blk[n] = malloc(MIB);
		if (!blk[n])
			break;
		memset(blk[n], n & 0xff, MIB);
	}
	int err = errno;
	printf("t-limit: %d MiB allocated and touched before malloc failed (%s)\n", n,
	       n < MAXB ? strerror(err) : "it never did");
	fflush(stdout);
	CHECK(n < MAXB, "malloc never failed after %d MiB", n);
	CHECK(err == ENOMEM, "malloc failed with errno %d, not ENOMEM", err);
	if (lim == 0) {                 /* the cgroup case: reaching here is the point */
		for (int i = 0; i < n; i++)
			free(blk[i]);
		return 0;
	}
	CHECK((size_t)n >= lim * 3 / 4 && (size_t)n <= lim, "malloc failed after %d MiB with a %zu MiB limit", n, lim);
	errno = 0;
	CHECK(malloc(MIB) == NULL && errno == ENOMEM, "a second malloc at the limit did not fail with ENOMEM");
	errno = 0;
	CHECK(calloc(1, 8 * MIB) == NULL && errno == ENOMEM, "calloc at the limit did not fail with ENOMEM");
	errno = 0;
	void *m = mmap(NULL, 8 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m == MAP_FAILED && errno == ENOMEM, "mmap at the limit: %p, errno %d (want MAP_FAILED, ENOMEM)", m, errno);
	errno = 0;
	void *r = realloc(blk[0], 16 * MIB);
	CHECK(r == NULL && errno == ENOMEM, "realloc growth at the limit: %p errno %d", r, errno);
	CHECK(blk[0][MIB - 1] == 0, "a failed realloc lost the block");

	/* freeing makes room again */
	for (int i = 0; i < n; i += 2) {
		free(blk[i]);
		blk[i] = NULL;
	}
	void *again = malloc(8 * MIB);
	CHECK(again != NULL, "after freeing half, malloc(8 MiB) still fails (errno %d)", errno);
	memset(again, 1, 8 * MIB);
	free(again);
	m = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED, "after freeing half, mmap(4 MiB) still fails");
	munmap(m, 4 * MIB);
	for (int i = 0; i < n; i++) {
		if (blk[i]) {
			CHECK(blk[i][12345] == (char)(i & 0xff), "block %d lost its contents", i);
			free(blk[i]);
		}
	}

	contig_stats_t st;
	TU_STATS(&st);
	printf("t-limit: limit %zu, hits %zu, committed peak %zu\n", st.limit, st.limit_hits, st.committed_peak);
	CHECK(st.limit == lim * MIB, "the statistics give the limit as %zu, not %zu MiB", st.limit, lim);
	CHECK(st.limit_hits >= 4, "limit_hits %zu after at least 4 refusals", st.limit_hits);
	CHECK(st.committed_peak <= lim * MIB, "committed peak %zu over the limit", st.committed_peak);
	return 0;
}
