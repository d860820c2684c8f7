/* stress.c - long-running stress of the built library, run under LD_PRELOAD by stress.sh:
 *   stress threads -t SEC [-j N]  threads churn blocks through a shared exchange, so most blocks
 *                                 are freed by another thread; threads exit and are replaced
 *                                 while their blocks are still live elsewhere
 *   stress fork -t SEC [-j N]     the same workload while the main thread forks storms of
 *                                 children that allocate, free their parent's blocks and exit
 *   stress limit -t SEC [-j N]    under CONTIG_LIMIT: allocate until ENOMEM, which may only come
 *                                 near the limit; the process is never killed
 *   stress grow -t SEC [-j N]     under CONTIG_MODE=lazy: a thread maps foreign pages with raw
 *                                 mmap(MAP_FIXED_NOREPLACE) just past the heap's frontier while
 *                                 the others grow the heap into them
 *   stress limit-peak             under CONTIG_LIMIT: a request that needs the dirty pages purged
 *                                 must not push committed past the limit (a regression test)
 * Invariants checked all along: every block is inside the range, 16-byte aligned, carries its
 * own pattern until it is freed (by whichever thread), foreign pages keep theirs, no block
 * overlaps a foreign mapping. Any failure prints a line and exits 1. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <malloc.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "contig.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static int (*owns)(const void *);
static int (*get_stats)(contig_stats_t *);
static size_t (*purge)(void);

static double seconds = 10;
static int nthreads = 8;
static double t_end;
static _Atomic(int) failed;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define FAIL(...) do { fflush(stdout); fprintf(stderr, "stress: FAIL: " __VA_ARGS__); fputc('\n', stderr); \
	atomic_store(&failed, 1); _exit(1); } while (0)

/* ---- per-thread random numbers ---- */
static __thread uint64_t rs;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}
static void seed_rnd(uint64_t s) { rs = s * 0x9e3779b97f4a7c15ull | 1; }

/* ---- blocks: a header {tag, size} then a pattern derived from the tag ---- */
typedef struct hdr { uint64_t tag, size; } hdr_t;
#define SAMPLE_EDGE 4096u

static inline uint8_t pat(uint64_t tag, size_t i) { return (uint8_t)(tag ^ (i * 0x9d) ^ (i >> 8)); }

/* bytes patterned: all of a small block; the edges and 16 bytes per 4 KiB of a large one */
static void each_marked(size_t n, void (*fn)(unsigned char *, size_t, uint64_t), unsigned char *p, uint64_t tag)
{
	if (n <= 65536) { for (size_t i = sizeof(hdr_t); i < n; i++) fn(p, i, tag); return; }
	for (size_t i = sizeof(hdr_t); i < SAMPLE_EDGE; i++) fn(p, i, tag);
	for (size_t i = SAMPLE_EDGE; i < n - SAMPLE_EDGE; i += 4096)
		for (size_t k = i; k < i + 16; k++) fn(p, k, tag);
	for (size_t i = n - SAMPLE_EDGE; i < n; i++) fn(p, i, tag);
}
static void put_byte(unsigned char *p, size_t i, uint64_t tag) { p[i] = pat(tag, i); }
static void chk_byte(unsigned char *p, size_t i, uint64_t tag)
{
	if (p[i] != pat(tag, i))
		FAIL("block %p (%zu bytes): byte +%zu is %#x, expected %#x", (void *)p, (size_t)((hdr_t *)p)->size,
		     i, p[i], pat(tag, i));
}

static void check_addr(void *p, size_t n, const char *what)
{
	if (!owns(p) || !owns((char *)p + n - 1)) FAIL("%s(%zu) = %p: outside the range", what, n, p);
	if ((uintptr_t)p & 15) FAIL("%s(%zu) = %p: not 16-byte aligned", what, n, p);
}

static void mark(void *p, size_t n)
{
	hdr_t *h = p;
	h->tag = (uintptr_t)p ^ (rnd() << 20);
	h->size = n;
	each_marked(n, put_byte, p, h->tag);
}

static void check_n(void *p, int is_mmap)
{
	hdr_t *h = p;
	if (!owns(p)) FAIL("block %p, outside the range", p);
	if (h->size < sizeof(hdr_t) || h->size > ((size_t)1 << 32)) FAIL("block %p: header size %#llx smashed", p,
	                                                                   (unsigned long long)h->size);
	if (!is_mmap && malloc_usable_size(p) < h->size) FAIL("block %p: usable size %zu < %llu", p, malloc_usable_size(p),
	                                          (unsigned long long)h->size);
	each_marked(h->size, chk_byte, p, h->tag);
}

static void check(void *p) { check_n(p, 0); }

/* ---- foreign mappings (grow mode) ---- */
#define NFOREIGN 256
static struct { uintptr_t a; size_t len; } foreign[NFOREIGN];
static _Atomic(int) nforeign;

static void check_foreign_overlap(void *p, size_t n)
{
	int k = atomic_load(&nforeign);
	for (int i = 0; i < k; i++)
		if ((uintptr_t)p < foreign[i].a + foreign[i].len && (uintptr_t)p + n > foreign[i].a)
			FAIL("block [%p, +%zu) overlaps foreign mapping [%#lx, +%zu)", p, n,
			     (unsigned long)foreign[i].a, foreign[i].len);
}

/* ---- the shared exchange ---- */
#define NX 4096
static _Atomic(void *) xch[NX];
static int grow_mode;                  /* larger blocks, kept longer */

static size_t pick_size(void)
{
	uint64_t r = rnd();
	if (grow_mode && (r & 15) == 0) return (1u << 20) + rnd() % (16u << 20);
	switch (r % 16) {
	case 0: return 16 + rnd() % (512u << 10);        /* up to half a MiB: large blocks */
	case 1: case 2: return 16 + rnd() % (128u << 10);
	case 3: case 4: case 5: return 16 + rnd() % 4096;
	default: return 16 + rnd() % 256;
	}
}

static void *new_block(void)
{
	size_t n = pick_size();
	void *p;
	switch (rnd() % 8) {
	case 0: {
		p = calloc(1, n);
		if (p) for (size_t i = 0; i < n; i += n > 65536 ? 4093 : 1)
			if (((unsigned char *)p)[i]) FAIL("calloc(%zu) = %p: byte +%zu not zero", n, p, i);
		break;
	}
	case 1: {
		size_t al = (size_t)16 << (rnd() % 10);
		if (posix_memalign(&p, al, n)) p = NULL;
		if (p && ((uintptr_t)p & (al - 1))) FAIL("posix_memalign(%zu) = %p: misaligned", al, p);
		break;
	}
	default: p = malloc(n); break;
	}
	if (!p) FAIL("allocation of %zu bytes failed (errno %d)", n, errno);
	check_addr(p, n, "malloc");
	if (grow_mode) check_foreign_overlap(p, n);
	mark(p, n);
	return p;
}

static void put(void *p)
{
	void *old = atomic_exchange(&xch[rnd() % NX], p);
	if (old) { check(old); free(old); }
}

/* One worker: a random number of operations, then exit (its blocks stay in the exchange). */
static void *worker(void *arg)
{
	seed_rnd((uintptr_t)arg ^ (uint64_t)(now() * 1e6));
	long ops = 2000 + (long)(rnd() % 40000);
	for (long i = 0; i < ops && now() < t_end; i++) {
		uint64_t r = rnd() % 16;
		void *p = atomic_exchange(&xch[rnd() % NX], NULL);
		if (p) {
			check(p);
			if (r < 3) {
				/* realloc: the header and the pattern up to the smaller size move with it */
				hdr_t h = *(hdr_t *)p;
				size_t n = pick_size();
				uintptr_t was = (uintptr_t)p;
				void *q = realloc(p, n);
				if (!q) FAIL("realloc(%#lx, %zu) failed", (unsigned long)was, n);
				check_addr(q, n, "realloc");
				if (((hdr_t *)q)->tag != h.tag) FAIL("realloc(%#lx) -> %p lost the header", (unsigned long)was, q);
				if (n >= h.size) { ((hdr_t *)q)->size = h.size; check(q); }
				mark(q, n);
				put(q);
				continue;
			}
			free(p);
		}
		if (r < 12) put(new_block());
	}
	return NULL;
}

static void drain(void)
{
	for (int i = 0; i < NX; i++) {
		void *p = atomic_exchange(&xch[i], NULL);
		if (p) { check(p); free(p); }
	}
}

/* Keep nthreads workers alive until the deadline; returns how many were started. */
static long churn_threads(void (*between)(void))
{
	pthread_t *t = calloc((size_t)nthreads, sizeof *t);
	long started = 0;
	for (int i = 0; i < nthreads; i++) {
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)started++)) FAIL("pthread_create");
	}
	while (now() < t_end) {
		for (int i = 0; i < nthreads; i++) {
			if (pthread_tryjoin_np(t[i], NULL) == 0) {
				/* it exited with blocks still in the exchange: a new thread frees them */
				if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)started++)) FAIL("pthread_create");
			}
		}
		if (between) between(); else usleep(2000);
	}
	for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
	free(t);
	return started;
}

/* ---- handoff: chains of threads, each replacing blocks its predecessor made, then handing the
 * set to a thread it starts and exiting (larsongen's shape, with short generations). Each new
 * thread's first calls are frees of blocks whose heap was abandoned and, often, adopted by
 * another chain's new thread meanwhile: remote frees into runs their owner may empty and give
 * back at once. (A freer preempted right after its freed bit went in read the run's metadata
 * through a page that had become another kind of run: SIGSEGV, about 1 run of larsongen 1 4 in
 * 40-120 with another copy running. This phase did not catch that in 64 s of two copies; it
 * keeps the path busy, 2,000 generations in 8 s.) ---- */
#define HSLOTS 5000
#define HOPS 50000
typedef struct { unsigned char *slot[HSLOTS]; long gens; } hchain_t;

/* blocks here carry their address and size only: the remote frees, not the checks, are what this
 * phase is for (a full pattern cut them to an eighth) */
static void hmark(unsigned char *p, size_t n) { ((hdr_t *)p)->tag = (uintptr_t)p; ((hdr_t *)p)->size = n; p[n - 1] = 0x5a; }
static void hcheck(unsigned char *p)
{
	hdr_t *h = (hdr_t *)p;
	if (h->tag != (uintptr_t)p || h->size < sizeof *h || h->size > 1016 || p[h->size - 1] != 0x5a)
		FAIL("block %p: header or last byte smashed", (void *)p);
}
static hchain_t *hchains;
static _Atomic(int) hchains_left;

static void *handoff_gen(void *arg)
{
	hchain_t *c = arg;
	seed_rnd((uintptr_t)c ^ (uint64_t)c->gens * 7919);
	for (int n = 0; n < HOPS; n++) {
		unsigned i = (unsigned)(rnd() % HSLOTS);
		if (c->slot[i]) { hcheck(c->slot[i]); free(c->slot[i]); }
		size_t sz = 17 + rnd() % 1000;
		unsigned char *p = malloc(sz);
		if (!p) FAIL("malloc(%zu) failed", sz);
		hmark(p, sz);
		c->slot[i] = p;
	}
	c->gens++;
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (now() < t_end) {
		if (pthread_create(&t, &a, handoff_gen, c)) FAIL("pthread_create");
	} else {
		for (unsigned i = 0; i < HSLOTS; i++)
			if (c->slot[i]) { hcheck(c->slot[i]); free(c->slot[i]); c->slot[i] = NULL; }
		atomic_fetch_sub(&hchains_left, 1);
	}
	pthread_attr_destroy(&a);
	return NULL;
}

static long handoff(void)
{
	hchains = calloc((size_t)nthreads, sizeof *hchains);
	if (!hchains) FAIL("calloc");
	atomic_store(&hchains_left, nthreads);
	for (int i = 0; i < nthreads; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, handoff_gen, &hchains[i])) FAIL("pthread_create");
		pthread_detach(t);
	}
	while (atomic_load(&hchains_left) > 0) usleep(2000);
	long gens = 0;
	for (int i = 0; i < nthreads; i++) gens += hchains[i].gens;
	free(hchains);
	return gens;
}

static size_t live_blocks(void)
{
	contig_stats_t st;
	st.size = sizeof st;
	if (get_stats(&st)) FAIL("contig_get_stats");
	return st.live_blocks;
}

/* ---- fork storms ---- */
static long forks;

static void child(void)
{
	seed_rnd((uint64_t)getpid());
	/* the parent's blocks, copied: check some and free them (other heaps, abandoned here) */
	for (int i = 0; i < 300; i++) {
		void *p = atomic_exchange(&xch[rnd() % NX], NULL);
		if (p) { check(p); free(p); }
	}
	void *mine[64];
	for (int i = 0; i < 64; i++) mine[i] = new_block();
	for (int i = 0; i < 64; i++) { check(mine[i]); free(mine[i]); }
	if (rnd() & 1) exit(0);
	_exit(0);
}

static void fork_storm(void)
{
	pid_t pids[8];
	int n = 1 + (int)(rnd() % 8);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0) FAIL("fork: %s", strerror(errno));
		if (pids[i] == 0) child();
		forks++;
	}
	for (int i = 0; i < n; i++) {
		int st = 0;
		double t0 = now();
		pid_t r;
		while ((r = waitpid(pids[i], &st, WNOHANG)) == 0) {
			if (now() - t0 > 20) {
				kill(pids[i], SIGKILL);
				waitpid(pids[i], &st, 0);
				FAIL("forked child %d hung for 20 s (a lock held across fork?)", (int)pids[i]);
			}
			usleep(1000);
		}
		if (r < 0) FAIL("waitpid: %s", strerror(errno));
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			FAIL("forked child %d ended with status %#x", (int)pids[i], st);
	}
}

/* ---- near the limit ---- */
static size_t limit_bytes;
static _Atomic(size_t) held;           /* bytes asked by the blocks the workers hold */
static _Atomic(long) enomems;

static void release(void *p, size_t n, int is_mmap)
{
	check_n(p, is_mmap);
	if (is_mmap) { if (munmap(p, n)) FAIL("munmap(%p, %zu): %s", p, n, strerror(errno)); }
	else free(p);
	atomic_fetch_sub(&held, n);
}

static void *limit_worker(void *arg)
{
	seed_rnd((uintptr_t)arg + 77);
	enum { MAXB = 4096 };
	struct held_block { void *p; size_t n; int is_mmap; } *b = calloc(MAXB, sizeof *b);
	int nb = 0;
	while (now() < t_end) {
		size_t n = (rnd() & 3) ? 16 + rnd() % 8192 : (64u << 10) + rnd() % (4u << 20);
		int is_mmap = (rnd() % 16) == 0;
		void *p;
		errno = 0;
		if (is_mmap) {
			p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED) p = NULL;
		} else
			p = malloc(n);
		if (!p) {
			if (errno != ENOMEM) FAIL("allocation of %zu failed with errno %d, not ENOMEM", n, errno);
			atomic_fetch_add(&enomems, 1);
			/* ENOMEM is expected only near the limit: what is held plus this request must come
			 * within what fragmentation and per-thread caches can cost (half the limit) */
			size_t h = atomic_load(&held);
			if (h + n < limit_bytes / 2) {
				/* what the library held then, to tell fragmentation from a leak of pages */
				contig_stats_t st = { .size = sizeof st };
				get_stats(&st);
				FAIL("ENOMEM for %zu bytes with only %zu held of a %zu limit (library: committed %zu, "
				     "live %zu bytes in %zu blocks, mmap %zu)", n, h, limit_bytes, st.committed,
				     st.live_bytes, st.live_blocks, st.mmap_bytes);
			}
			for (int i = nb - 1; i >= 0; i--) {            /* give back about half */
				if (rnd() & 1) continue;
				release(b[i].p, b[i].n, b[i].is_mmap);
				b[i] = b[--nb];
			}
			continue;
		}
		/* held from the moment it is handed out: counted only after its pattern was written
		 * (up to 4 MiB), the blocks other threads were marking went uncounted when this thread
		 * met ENOMEM, and a run read less than the library held */
		atomic_fetch_add(&held, n);
		check_addr(p, n, is_mmap ? "mmap" : "malloc");
		mark(p, n);
		if (nb == MAXB) {
			int i = (int)(rnd() % MAXB);
			release(b[i].p, b[i].n, b[i].is_mmap);
			b[i] = b[--nb];
		}
		b[nb++] = (struct held_block){ p, n, is_mmap };
	}
	for (int i = 0; i < nb; i++) release(b[i].p, b[i].n, b[i].is_mmap);
	free(b);
	return NULL;
}

/* ---- foreign mappings appearing while the heap grows lazily ---- */
static long foreign_tries;

static void *intruder(void *arg)
{
	(void)arg;
	seed_rnd(4242);
	contig_stats_t st;
	while (now() < t_end && atomic_load(&nforeign) < NFOREIGN) {
		st.size = sizeof st;
		get_stats(&st);
		uintptr_t a = (st.base + st.mapped + (rnd() % (64u << 20))) & ~(uintptr_t)4095;
		size_t len = 4096 * (1 + rnd() % 64);
		if (a + len > st.base + st.range_size) { usleep(1000); continue; }
		foreign_tries++;
		long r = syscall(SYS_mmap, a, len, PROT_READ | PROT_WRITE,
		                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (r < 0 && r > -4096) { usleep(200); continue; }
		if ((uintptr_t)r != a) { syscall(SYS_munmap, r, len); usleep(200); continue; }   /* a hint only */
		memset((void *)a, 0xf0, len);
		int k = atomic_load(&nforeign);
		foreign[k].a = a;
		foreign[k].len = len;
		atomic_store(&nforeign, k + 1);
		usleep(5000 + rnd() % 20000);
	}
	return NULL;
}

static void check_foreign_intact(void)
{
	int k = atomic_load(&nforeign);
	for (int i = 0; i < k; i++) {
		const unsigned char *p = (const unsigned char *)foreign[i].a;
		for (size_t j = 0; j < foreign[i].len; j += 512)
			if (p[j] != 0xf0) FAIL("foreign mapping %p: byte +%zu clobbered (%#x)", (const void *)p, j, p[j]);
	}
}

static void check_exchange_vs_foreign(void)
{
	for (int i = 0; i < NX; i++) {
		hdr_t *p = atomic_load(&xch[i]);
		(void)p;  /* racing with workers: only the final drain checks blocks */
	}
	check_foreign_intact();
}

static void between_grow(void)
{
	check_foreign_intact();
	usleep(20000);
}

static const char usage[] = "usage: %s threads|handoff|fork|limit|grow [-t SECONDS] [-j THREADS]\n";

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int opt;
	optind = 2;
	while ((opt = getopt(argc, argv, "t:j:")) != -1) {
		if (opt == 't') seconds = atof(optarg);
		else if (opt == 'j') nthreads = atoi(optarg);
		else { fprintf(stderr, usage, argv[0]); return 2; }
	}
	owns = (int (*)(const void *))dlsym(RTLD_DEFAULT, "contig_owns");
	get_stats = (int (*)(contig_stats_t *))dlsym(RTLD_DEFAULT, "contig_get_stats");
	purge = (size_t (*)(void))dlsym(RTLD_DEFAULT, "contig_purge");
	if (!owns || !get_stats || !purge) { fprintf(stderr, "stress: not running under libcontig (LD_PRELOAD)\n"); return 77; }
	seed_rnd(1);
	t_end = now() + seconds;
	size_t base_live = live_blocks();
	double t0 = now();

	if (!strcmp(mode, "threads")) {
		long n = churn_threads(NULL);
		drain();
		printf("stress threads: %.1f s, %d at a time, %ld threads started\n", now() - t0, nthreads, n);
	} else if (!strcmp(mode, "handoff")) {
		long g = handoff();
		printf("stress handoff: %.1f s, %d chains, %ld generations\n", now() - t0, nthreads, g);
	} else if (!strcmp(mode, "fork")) {
		long n = churn_threads(fork_storm);
		drain();
		printf("stress fork: %.1f s, %ld threads started, %ld children forked\n", now() - t0, n, forks);
	} else if (!strcmp(mode, "limit")) {
		contig_stats_t st;
		st.size = sizeof st;
		get_stats(&st);
		limit_bytes = st.limit;
		if (!limit_bytes) { fprintf(stderr, "stress limit: set CONTIG_LIMIT\n"); return 2; }
		pthread_t t[64];
		int nt = nthreads > 64 ? 64 : nthreads;
		for (int i = 0; i < nt; i++) pthread_create(&t[i], NULL, limit_worker, (void *)(uintptr_t)i);
		for (int i = 0; i < nt; i++) pthread_join(t[i], NULL);
		get_stats(&st);
		printf("stress limit: %.1f s, limit %zu MiB, %ld ENOMEM (none early), %zu limit hits, committed peak %zu MiB\n",
		       now() - t0, limit_bytes >> 20, (long)enomems, st.limit_hits, st.committed_peak >> 20);
		if (st.committed_peak > limit_bytes) FAIL("committed peak %zu above the limit %zu", st.committed_peak, limit_bytes);
		if (!enomems) printf("stress limit: note: the limit was never reached\n");
	} else if (!strcmp(mode, "limit-peak")) {
		/* A free run of 4 dirty pages then clean ones, committed filled to the limit, then 5
		 * pages asked: the purge that makes room leaves all 5 to count, but 1 was checked. */
		contig_stats_t st;
		const size_t P = 65536;
		st.size = sizeof st;
		get_stats(&st);
		if (!st.limit) { fprintf(stderr, "stress limit-peak: set CONTIG_LIMIT\n"); return 2; }
		char *g = malloc(16 * P - P / 2);            /* large blocks: whole 64 KiB pages */
		free(g);
		purge();                                     /* g's pages: a clean free run */
		char *a = malloc(4 * P - P / 2);             /* its first 4 pages, made dirty */
		if (!a) FAIL("limit-peak: setup allocation failed");
		memset(a, 1, 4 * P - P / 2);
		free(a);
		get_stats(&st);
		char *x = malloc(st.limit - st.committed - P / 2);   /* elsewhere: committed at the limit */
		if (!x) FAIL("limit-peak: filling up to the limit failed (committed %zu of %zu)", st.committed, st.limit);
		char *c = malloc(5 * P - P / 2);
		get_stats(&st);
		printf("stress limit-peak: limit %zu KiB, committed %zu KiB, peak %zu KiB, 5-page request %s\n",
		       st.limit >> 10, st.committed >> 10, st.committed_peak >> 10, c ? "served" : "refused");
		if (st.committed_peak > st.limit)
			FAIL("committed peak %zu above the limit %zu after a request that needed a purge",
			     st.committed_peak, st.limit);
		free(c);
		free(x);
		(void)g;
	} else if (!strcmp(mode, "grow")) {
		contig_stats_t st;
		st.size = sizeof st;
		get_stats(&st);
		if (st.mode != CONTIG_MODE_LAZY) { fprintf(stderr, "stress grow: set CONTIG_MODE=lazy\n"); return 2; }
		grow_mode = 1;
		pthread_t it;
		pthread_create(&it, NULL, intruder, NULL);
		long n = churn_threads(between_grow);
		pthread_join(it, NULL);
		check_exchange_vs_foreign();
		/* every live block against every foreign mapping, then free */
		for (int i = 0; i < NX; i++) {
			hdr_t *p = atomic_exchange(&xch[i], NULL);
			if (p) { check(p); check_foreign_overlap(p, p->size); free(p); }
		}
		check_foreign_intact();
		get_stats(&st);
		printf("stress grow: %.1f s, %ld threads, %d foreign mappings placed (of %ld tries), frontier %zu MiB, "
		       "%zu collisions recorded\n", now() - t0, n, atomic_load(&nforeign), foreign_tries,
		       st.mapped >> 20, st.collisions);
		if (atomic_load(&nforeign) && st.collisions == 0 && st.mapped > 0) {
			/* the frontier passed a foreign mapping without noticing it */
			for (int i = 0; i < nforeign; i++)
				if (foreign[i].a + foreign[i].len <= st.base + st.mapped)
					FAIL("the frontier (%#lx) passed foreign mapping %#lx with no collision recorded",
					     (unsigned long)(st.base + st.mapped), (unsigned long)foreign[i].a);
		}
	} else {
		fprintf(stderr, usage, argv[0]);
		return 2;
	}
	purge();
	size_t live = live_blocks();
	/* libc's own blocks (stdio, thread stacks' TLS) may come and go; ours are all freed */
	if (live > base_live + 256) FAIL("%zu live blocks at the end, %zu at the start", live, base_live);
	return atomic_load(&failed);
}
