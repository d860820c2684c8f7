/* test-heap.c - thread heaps: small blocks in range and aligned, reuse, remote frees from other
 * threads, thread exit handing memory back, and the misuse that must abort. */
#include "alloc.h"
#include "heap.h"
#include "region.h"
#include "range.h"
#include "init.h"
#include "os.h"
#include "stats.h"
#include "suites.h"
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

START_TEST(small_blocks)
{
	void *p[2000];
	for (int i = 0; i < 2000; i++) {
		size_t n = (size_t)(i * 37) % 5000;
		p[i] = alloc_malloc(n);
		ck_assert_ptr_nonnull(p[i]);
		ck_assert(range_has(p[i]));
		ck_assert_uint_eq((uintptr_t)p[i] % 16, 0);
		ck_assert_uint_ge(alloc_usable_size(p[i]), n);
		memset(p[i], i & 0xff, n);
	}
	for (int i = 0; i < 2000; i++) {
		size_t n = (size_t)(i * 37) % 5000;
		for (size_t k = 0; k < n; k++) ck_assert_uint_eq(((unsigned char *)p[i])[k], (unsigned)(i & 0xff));
		alloc_free(p[i]);
	}
}
END_TEST

START_TEST(freed_block_reused)
{
	/* a freed block comes back once the page's current free list is used up */
	static void *got[2000];
	void *a = alloc_malloc(48);
	alloc_free(a);
	int found = -1;
	for (int i = 0; i < 2000 && found < 0; i++) {
		got[i] = alloc_malloc(48);
		if (got[i] == a) found = i;
	}
	ck_assert_int_ge(found, 0);
	for (int i = 0; i <= found; i++) alloc_free(got[i]);
}
END_TEST

#define XN 20000
static void *xblocks[XN];

static void *free_all(void *arg)
{
	(void)arg;
	for (int i = 0; i < XN; i++) alloc_free(xblocks[i]);
	return NULL;
}

START_TEST(remote_frees_come_back)
{
	for (int i = 0; i < XN; i++) xblocks[i] = alloc_malloc(64);
	pthread_t t;
	pthread_create(&t, NULL, free_all, NULL);
	pthread_join(t, NULL);
	/* the owner collects them: allocating the same count again needs no new pages */
	contig_stats_t st;
	st.size = sizeof st;
	contig_get_stats(&st);
	size_t mapped = st.mapped;
	for (int i = 0; i < XN; i++) xblocks[i] = alloc_malloc(64);
	contig_get_stats(&st);
	ck_assert_uint_eq(st.mapped, mapped);
	for (int i = 0; i < XN; i++) alloc_free(xblocks[i]);
}
END_TEST

/* The run that holds p (its head page). */
static page_t *run_of(const void *p)
{
	page_t *pg = page_of(p);
	if (pg->kind == PK_CONT) pg -= pg->head_off;
	return pg;
}

/* The runs of xblocks[] (each counted once) and, in *held, those still small runs of class cls
 * of heap h. */
static int runs_of_xblocks(heap_t *h, unsigned cls, int *held)
{
	int runs = 0;
	page_t *seen = NULL;
	*held = 0;
	for (int i = 0; i < XN; i++) {
		page_t *pg = run_of(xblocks[i]);
		if (pg == seen) continue;
		seen = pg;
		runs++;
		if (pg->kind == PK_SMALL && page_heap(pg) == h && pg->cls == cls) (*held)++;
	}
	return runs;
}

/* A thread hands its blocks to another, which frees them all, and moves on to other sizes: the
 * runs the frees emptied leave its heap at its next trip to the slow path (any class's), not
 * when it next asks for their class, which may be never. At most the class's first run (which
 * malloc serves from), the one behind it (where malloc goes next) and the heap's spare
 * one-page runs stay. */
START_TEST(handed_off_runs_go_back)
{
	for (int i = 0; i < XN; i++) xblocks[i] = alloc_malloc(100);
	page_t *first = page_of(xblocks[0]);
	ck_assert_int_eq(first->kind, PK_SMALL);
	heap_t *h = page_heap(first);
	unsigned cls = first->cls;
	pthread_t t;
	pthread_create(&t, NULL, free_all, NULL);
	pthread_join(t, NULL);
	/* blocks of another class, enough to run one of its pages dry */
	enum { OTHER = 200 };
	static void *other[OTHER];
	for (int i = 0; i < OTHER; i++) other[i] = alloc_malloc(3000);
	int held, runs = runs_of_xblocks(h, cls, &held);
	ck_assert_int_ge(runs, 20);
	ck_assert_int_le(held, 2 + HEAP_SPARES);
	for (int i = 0; i < OTHER; i++) alloc_free(other[i]);
}
END_TEST

static void *free_half(void *arg)
{
	for (int i = (int)(intptr_t)arg; i < XN; i += 2) alloc_free(xblocks[i]);
	return NULL;
}

/* The same when the frees come while the owner works on: the first frees into each full run
 * queue it and the drain puts it back with live blocks left; the rest come without a word, and
 * the sweep of the class the owner no longer asks for gives the runs back (within the purge
 * delay, doubled while sweeps find nothing: the loop waits up to 3 s). */
START_TEST(idle_class_runs_go_back)
{
	for (int i = 0; i < XN; i++) xblocks[i] = alloc_malloc(100);
	page_t *first = page_of(xblocks[0]);
	heap_t *h = page_heap(first);
	unsigned cls = first->cls, other = size_class(3000);
	pthread_t t;
	pthread_create(&t, NULL, free_half, (void *)0);
	pthread_join(t, NULL);
	alloc_free(heap_alloc_class(other));            /* the drain: runs back with live blocks */
	int held, runs = runs_of_xblocks(h, cls, &held);
	ck_assert_int_ge(runs, 20);
	ck_assert_int_ge(held, runs - 1);
	pthread_create(&t, NULL, free_half, (void *)1);
	pthread_join(t, NULL);
	for (int ms = 0; ms < 3000 && held > 1 + HEAP_SPARES; ms += 10) {
		for (int k = 0; k < 64; k++) alloc_free(heap_alloc_class(other));
		usleep(10000);
		runs_of_xblocks(h, cls, &held);
	}
	ck_assert_int_le(held, 1 + HEAP_SPARES);
}
END_TEST

static void *alloc_and_exit(void *arg)
{
	(void)arg;
	for (int i = 0; i < XN; i++) xblocks[i] = alloc_malloc(100);
	return NULL;
}

/* Remote frees of mixed sizes: each sets its block's bit in the run's freed bitmap and writes
 * nothing into the block; the live bits stay set until the owner takes the blocks back. */
#define MIX 4
#define MIXN 40
static unsigned char *mixed[MIX][MIXN];
static const size_t mix_sizes[MIX] = { 24, 100, 300, 12000 };

static void *free_mixed(void *arg)
{
	(void)arg;
	for (int i = 0; i < MIXN; i++)
		for (int c = 0; c < MIX; c++) alloc_free(mixed[c][i]);
	return NULL;
}

static uint64_t bit_of(const void *p)
{
	page_t *pg = run_of(p);
	return block_index(pg, p);
}

START_TEST(remote_frees_set_freed_bits)
{
	contig_stats_t st;
	st.size = sizeof st;
	contig_get_stats(&st);
	size_t live0 = st.live_blocks;
	uint64_t frees_before = st.calls_free;
	for (int i = 0; i < MIXN; i++)
		for (int c = 0; c < MIX; c++) {
			mixed[c][i] = alloc_malloc(mix_sizes[c]);
			memset(mixed[c][i], 0xa5 ^ i ^ c, mix_sizes[c]);
		}
	pthread_t t;
	pthread_create(&t, NULL, free_mixed, NULL);
	pthread_join(t, NULL);
	contig_get_stats(&st);
	uint64_t frees0 = st.calls_free;
	/* counted as frees at once, and as freed in the live figures (their owner has not looked) */
	ck_assert_uint_ge(frees0, frees_before + MIX * MIXN);
	ck_assert_uint_le(st.live_blocks, live0);
	for (int i = 0; i < MIXN; i++)
		for (int c = 0; c < MIX; c++) {
			unsigned char *p = mixed[c][i];
			page_t *pg = run_of(p);
			uint64_t k = bit_of(p);
			/* not taken back yet: still live, marked freed, tagged in its second word (the
			 * run marked for the owner's free), its other bytes untouched */
			ck_assert(live_test(pg, k));
			ck_assert(atomic_load(&page_freed(pg)[k >> 6]) >> (k & 63) & 1);
			ck_assert(atomic_load(&page_remote(pg)->pending) >> (k >> 6) & 1);
			ck_assert(atomic_load(&pg->owner) & PAGE_REMOTE);
			ck_assert_uint_eq(((block_t *)p)->tag, remote_tag(p));
			for (size_t j = 0; j < mix_sizes[c]; j++)
				if (j < 8 || j >= 16) ck_assert_uint_eq(p[j], (unsigned)(0xa5 ^ i ^ c) & 0xff);
		}
	heap_collect_all();                                            /* the owner takes them back */
	for (int i = 0; i < MIXN; i++)
		for (int c = 0; c < MIX; c++) {
			page_t *pg = run_of(mixed[c][i]);
			uint64_t k = bit_of(mixed[c][i]);
			if (pg->kind != PK_SMALL) continue;                /* its run was emptied and given back */
			ck_assert(!live_test(pg, k));
			ck_assert(!(atomic_load(&page_freed(pg)[k >> 6]) >> (k & 63) & 1));
			ck_assert_uint_eq(((block_t *)mixed[c][i])->tag, FREE_TAG); /* tagged free */
		}
	contig_get_stats(&st);
	ck_assert_uint_le(st.live_blocks, live0);                      /* every one was taken back */
	/* and counted once: the owner's count takes over what the freed bits counted */
	ck_assert_uint_ge(st.calls_free, frees0);
	ck_assert_uint_le(st.calls_free, frees0 + 8);
}
END_TEST

/* A one-page run that empties behind the head is kept as a spare; when its class needs a run
 * again it comes back as it was, its blocks carved and on its free list (last freed first),
 * not carved afresh from the run's start. */
#define SP_N 3072
static void *sp_blocks[SP_N];
START_TEST(spare_keeps_its_carved_blocks)
{
	unsigned cls = size_class(64);
	ck_assert_uint_eq(class_pages[cls], 1);
	ck_assert_uint_eq(class_blocks[cls] * 3, SP_N);            /* three runs' worth */
	heap_collect_all();
	for (int i = 0; i < SP_N; i++) sp_blocks[i] = alloc_malloc(64);
	page_t *head = heap_tls->pages[cls];
	for (int i = 0; i < SP_N; i++) alloc_free(sp_blocks[i]);    /* in order: last freed is highest */
	bool seen = false;
	for (int i = 0; i < SP_N; i++) {
		void *p = sp_blocks[i] = alloc_malloc(64);
		page_t *pg = run_of(p);
		if (pg == head || seen) continue;
		seen = true;                                          /* the first block of a spare */
		ck_assert_ptr_ne(p, (void *)pg->start);
		ck_assert_ptr_eq(p, (void *)(pg->start + (class_blocks[cls] - 1) * 64));
	}
	ck_assert(seen);
	for (int i = 0; i < SP_N; i++) alloc_free(sp_blocks[i]);
}
END_TEST

/* calls_malloc and calls_free count exactly (mallocs are not counted one by one: the live blocks
 * make up the difference), for small and large blocks, local and remote frees, and never go
 * down when blocks are freed. */
static void *count_blocks[64];
static void *free_counted(void *arg)
{
	(void)arg;
	for (int i = 0; i < 16; i++) alloc_free(count_blocks[i]);
	return NULL;
}

START_TEST(call_counts_exact)
{
	contig_stats_t a, b;
	a.size = b.size = sizeof a;
	heap_collect_all();
	contig_get_stats(&a);
	for (int i = 0; i < 60; i++) count_blocks[i] = alloc_malloc((size_t)(i * 53) % 3000);
	for (int i = 60; i < 64; i++) count_blocks[i] = alloc_malloc((size_t)(i - 59) << 18);
	contig_get_stats(&b);
	ck_assert_uint_eq(b.calls_malloc - a.calls_malloc, 64);
	ck_assert_uint_eq(b.calls_free - a.calls_free, 0);
	pthread_t t;
	pthread_create(&t, NULL, free_counted, NULL);             /* 16 remote frees */
	pthread_join(t, NULL);
	for (int i = 16; i < 40; i++) alloc_free(count_blocks[i]);
	alloc_free(count_blocks[60]);
	alloc_free(count_blocks[61]);
	contig_get_stats(&b);
	ck_assert_uint_eq(b.calls_malloc - a.calls_malloc, 64);   /* frees do not lower it */
	/* the 26 local ones, and the remote ones once taken back: a local free on a run that
	 * another thread freed into takes that run's back first */
	ck_assert_uint_ge(b.calls_free - a.calls_free, 26);
	ck_assert_uint_le(b.calls_free - a.calls_free, 42);
	heap_collect_all();
	contig_get_stats(&b);
	ck_assert_uint_eq(b.calls_malloc - a.calls_malloc, 64);
	ck_assert_uint_eq(b.calls_free - a.calls_free, 42);
	for (int i = 40; i < 60; i++) alloc_free(count_blocks[i]);
	alloc_free(count_blocks[62]);
	alloc_free(count_blocks[63]);
	contig_get_stats(&b);
	ck_assert_uint_eq(b.calls_malloc - a.calls_malloc, 64);
	ck_assert_uint_eq(b.calls_free - a.calls_free, 64);
}
END_TEST

/* A thread that frees many of another thread's blocks before its first malloc needs no heap for
 * them, and its first malloc adopts the abandoned heap that holds runs. */
static void *mainblocks[200];
static heap_t *t1_heap, *t2_before, *t2_after;

static void *keep_and_exit(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++) xblocks[i] = alloc_malloc(48);
	t1_heap = heap_tls;
	return NULL;
}

static void *free_then_malloc(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++) alloc_free(mainblocks[i]);
	t2_before = heap_tls;
	void *p = alloc_malloc(48);
	t2_after = heap_tls;
	alloc_free(p);
	return NULL;
}

START_TEST(freeing_thread_adopts_at_first_malloc)
{
	pthread_t t;
	for (int i = 0; i < 200; i++) mainblocks[i] = alloc_malloc(100);
	pthread_create(&t, NULL, keep_and_exit, NULL);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, free_then_malloc, NULL);
	pthread_join(t, NULL);
	ck_assert_ptr_eq(t2_before, &heap_none);     /* 200 remote frees: no heap needed */
	ck_assert_ptr_eq(t2_after, t1_heap);         /* the one with runs, adopted by the first malloc */
	for (int i = 0; i < 100; i++) alloc_free(xblocks[i]);
}
END_TEST

/* A thread whose first call frees a block of an abandoned heap adopts that heap then: the free is
 * the owner's, and the run is not marked for remote frees (which would cost every later free of
 * its blocks a look at their tags). */
static heap_t *t3_after_free;
static uintptr_t t3_owner;

static void *free_abandoned_first(void *arg)
{
	(void)arg;
	alloc_free(xblocks[0]);
	t3_after_free = heap_tls;
	t3_owner = __atomic_load_n(&page_of(xblocks[1])->owner, __ATOMIC_RELAXED);
	for (int i = 1; i < 100; i++) alloc_free(xblocks[i]);
	return NULL;
}

START_TEST(freeing_thread_adopts_the_owner_heap)
{
	pthread_t t;
	pthread_create(&t, NULL, keep_and_exit, NULL);
	pthread_join(t, NULL);
	ck_assert(atomic_load(&t1_heap->abandoned));
	pthread_create(&t, NULL, free_abandoned_first, NULL);
	pthread_join(t, NULL);
	ck_assert_ptr_eq(t3_after_free, t1_heap);                /* adopted at the first free */
	ck_assert_uint_eq(t3_owner, (uintptr_t)t1_heap);          /* and no PAGE_REMOTE mark */
	ck_assert(atomic_load(&t1_heap->abandoned));              /* abandoned again at its exit */
}
END_TEST

/* fork may catch a thread between the two stores of its collect of other threads' frees: a
 * block's live bit cleared, its freed bit not yet. In the child that heap is abandoned, and the
 * next free into the run drains it: the collect must not call that block a double free (the
 * stress suite's fork phase aborted so, once in a round's runs of the suite). Here the thread
 * is parked, the cut is made by hand, and a real fork follows; the child frees into the run
 * and exits. */
static void *fc_blocks[2];
static pthread_mutex_t fc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fc_cond = PTHREAD_COND_INITIALIZER;
static int fc_state;

static void *fc_owner(void *arg)
{
	(void)arg;
	fc_blocks[0] = alloc_malloc(48);
	fc_blocks[1] = alloc_malloc(48);
	pthread_mutex_lock(&fc_lock);
	fc_state = 1;
	pthread_cond_broadcast(&fc_cond);
	while (fc_state != 2) pthread_cond_wait(&fc_cond, &fc_lock);
	pthread_mutex_unlock(&fc_lock);
	return NULL;
}

START_TEST(fork_between_collect_stores)
{
	pthread_t t;
	pthread_create(&t, NULL, fc_owner, NULL);
	pthread_mutex_lock(&fc_lock);
	while (fc_state != 1) pthread_cond_wait(&fc_cond, &fc_lock);
	pthread_mutex_unlock(&fc_lock);
	void *a = fc_blocks[0], *b = fc_blocks[1];
	page_t *pg = page_of(a);                        /* 48 bytes: a one-page run, its own head */
	ck_assert_ptr_eq(pg, page_of(b));
	uint64_t bit = block_index(pg, a);
	alloc_free(a);                                  /* a remote free: a's freed bit */
	ck_assert(freed_test(pg, bit));
	/* the owner's collect, cut after its first store */
	page_live(pg)[bit >> 6] &= ~(1ull << (bit & 63));
	pid_t pid = fork();
	if (pid == 0) {
		alloc_free(b);                          /* drains the abandoned heap: collects a's bit */
		_exit(freed_test(pg, bit) ? 3 : 0);     /* a's bit went, with b's */
	}
	int st = 0;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	/* the cut undone here: the owner collects a at its exit */
	page_live(pg)[bit >> 6] |= 1ull << (bit & 63);
	pthread_mutex_lock(&fc_lock);
	fc_state = 2;
	pthread_cond_broadcast(&fc_cond);
	pthread_mutex_unlock(&fc_lock);
	pthread_join(t, NULL);
}
END_TEST

START_TEST(thread_exit_then_free_elsewhere)
{
	contig_stats_t st;
	st.size = sizeof st;
	for (int round = 0; round < 5; round++) {
		pthread_t t;
		pthread_create(&t, NULL, alloc_and_exit, NULL);
		pthread_join(t, NULL);
		for (int i = 0; i < XN; i++) alloc_free(xblocks[i]);
	}
	contig_get_stats(&st);
	ck_assert_uint_lt(st.live_blocks, 100);       /* the exited threads' pages drained */
}
END_TEST

/* Threads that hand one freed block in eight to another thread and exit while the others
 * still free theirs: pages queued by those remote frees and emptied by an exiting thread's last
 * collection once sent its clean-up round in circles (the exit never finished). */
#define ET 4
#define ESLOTS 2000
static struct { pthread_mutex_t lock; int n; void *blk[4096]; } ebox[ET];
static void edrain(int t)
{
	void *local[4096];
	pthread_mutex_lock(&ebox[t].lock);
	int n = ebox[t].n;
	memcpy(local, ebox[t].blk, (size_t)n * sizeof(void *));
	ebox[t].n = 0;
	pthread_mutex_unlock(&ebox[t].lock);
	for (int i = 0; i < n; i++) alloc_free(local[i]);
}
static void *exchange_and_exit(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint64_t r = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1);
	static __thread void *slot[ESLOTS];
	for (long n = 0; n < 300000; n++) {
		r ^= r << 13; r ^= r >> 7; r ^= r << 17;
		unsigned i = (unsigned)((r >> 16) % ESLOTS);
		int to = (int)((r >> 48) % ET);
		if (slot[i] && (r & 7) == 0 && to != t) {
			pthread_mutex_lock(&ebox[to].lock);
			if (ebox[to].n < 4096) { ebox[to].blk[ebox[to].n++] = slot[i]; slot[i] = NULL; }
			pthread_mutex_unlock(&ebox[to].lock);
		}
		alloc_free(slot[i]);
		slot[i] = alloc_malloc(16 + (size_t)((r >> 24) % 4081));
		if ((n & 63) == 63) edrain(t);
	}
	for (int i = 0; i < ESLOTS; i++) { alloc_free(slot[i]); slot[i] = NULL; }
	return NULL;
}
START_TEST(exit_while_freed_remotely)
{
	for (int t = 0; t < ET; t++) pthread_mutex_init(&ebox[t].lock, NULL);
	for (int round = 0; round < 4; round++) {
		pthread_t th[ET];
		for (int t = 0; t < ET; t++) pthread_create(&th[t], NULL, exchange_and_exit, (void *)(intptr_t)t);
		for (int t = 0; t < ET; t++) pthread_join(th[t], NULL);
		for (int t = 0; t < ET; t++) edrain(t);
	}
}
END_TEST

/* Many threads free into the owner's runs while the owner keeps taking remote frees back from
 * the same runs: a free whose bit goes into a word at the moment the owner takes that word must
 * not be lost (it would stay live for ever, and its run would never empty). Each round the owner
 * allocates blocks of one class (so that the frees share bitmap words), the freers free them
 * all, and the owner collects in a loop meanwhile; at the end every block is back and no freed
 * bit is left over. (Made to fail: a freer that tells the owner only when the word it sets a
 * bit in was empty loses frees here within a few runs.) */
#define RF_THREADS 3
#define RF_BLOCKS 4000
#define RF_ROUNDS 150
static void *rf_blocks[RF_BLOCKS];
static _Atomic int rf_round, rf_done;

static void *rf_freer(void *arg)
{
	int id = (int)(intptr_t)arg;
	for (int r = 1; r <= RF_ROUNDS; r++) {
		while (atomic_load(&rf_round) < r) {}
		for (int i = id; i < RF_BLOCKS; i += RF_THREADS) alloc_free(rf_blocks[i]);
		atomic_fetch_add(&rf_done, 1);
	}
	return NULL;
}

START_TEST(remote_frees_race_with_collection)
{
	contig_stats_t st;
	st.size = sizeof st;
	heap_collect_all();
	contig_get_stats(&st);
	size_t live0 = st.live_blocks;
	pthread_t t[RF_THREADS];
	for (int i = 0; i < RF_THREADS; i++) pthread_create(&t[i], NULL, rf_freer, (void *)(intptr_t)i);
	for (int r = 1; r <= RF_ROUNDS; r++) {
		for (int i = 0; i < RF_BLOCKS; i++) rf_blocks[i] = alloc_malloc(16);
		atomic_store(&rf_round, r);
		while (atomic_load(&rf_done) < r * RF_THREADS) heap_collect_all();
	}
	for (int i = 0; i < RF_THREADS; i++) pthread_join(t[i], NULL);
	heap_collect_all();
	contig_get_stats(&st);
	ck_assert_uint_le(st.live_blocks, live0);
	for (size_t i = 0, end = range_frontier(); i < end; i++) {
		const page_t *pg = &G.pages[i];
		if (pg->kind != PK_SMALL || page_heap(pg) != heap_tls) continue;
		ck_assert_uint_eq(atomic_load(&page_remote(pg)->pending), 0);
		for (unsigned w = 0; w < LIVE_BITS / 64; w++) ck_assert_uint_eq(atomic_load(&page_freed(pg)[w]), 0);
	}
}
END_TEST

/* malloc_usable_size tells the bytes a caller may use: none in a freed block (small, small of a
 * multi-page run, large) or at an address that starts no block. */
START_TEST(usable_size_of_freed_blocks)
{
	static const size_t sizes[] = { 24, 1000, 20000, 300000 };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char *p = alloc_malloc(sizes[i]), *keep = alloc_malloc(sizes[i]);
		ck_assert_uint_ge(alloc_usable_size(p), sizes[i]);
		ck_assert_uint_eq(alloc_usable_size(p + 16), 0);
		alloc_free(p);
		ck_assert_uint_eq(alloc_usable_size(p), 0);
		ck_assert_uint_ge(alloc_usable_size(keep), sizes[i]);
		alloc_free(keep);
	}
}
END_TEST

START_TEST(large_blocks_and_realloc_in_place)
{
	char *p = alloc_malloc(300000);
	ck_assert(range_has(p));
	ck_assert_uint_eq((uintptr_t)p % PAGE_SIZE, 0);
	memset(p, 3, 300000);
	char *q = alloc_realloc(p, 900000);
	ck_assert_ptr_eq(p, q);                          /* the next pages were free */
	for (int i = 0; i < 300000; i++) ck_assert_int_eq(q[i], 3);
	q = alloc_realloc(q, 200000);
	ck_assert_ptr_eq(p, q);
	alloc_free(q);
}
END_TEST

/* A freed large block of up to LCACHE_PAGES pages stays in its thread's cache (large_cache.c):
 * freed to every check meanwhile, counted freed, and given back by the next malloc of about its
 * size, at the same address; a much smaller request does not take it; of LCACHE_N + 1 blocks
 * freed, the one freed first goes back to the runs. */
START_TEST(large_cache_reuse)
{
	contig_stats_t s0, s1;
	stats_collect(&s0);
	char *p = alloc_malloc(300000);
	memset(p, 5, 300000);
	page_t *h = page_of(p);
	alloc_free(p);
	ck_assert_uint_eq(h->kind, PK_LARGE);           /* still a block to the runs */
	ck_assert(h->asked == ASKED_CACHED);
	ck_assert_uint_eq(alloc_usable_size(p), 0);
	stats_collect(&s1);
	ck_assert_uint_eq(s1.live_blocks, s0.live_blocks);
	ck_assert_uint_eq(s1.live_bytes, s0.live_bytes);
	ck_assert_uint_eq(s1.calls_free - s0.calls_free, 1);
	char *q = alloc_malloc(290000);                 /* 5 pages, as 300000 */
	ck_assert_ptr_eq(p, q);
	ck_assert_uint_eq(alloc_usable_size(q), (size_t)5 << PAGE_SHIFT);
	ck_assert(h->asked == 290000);
	stats_collect(&s1);
	ck_assert_uint_eq(s1.live_blocks, s0.live_blocks + 1);
	ck_assert_uint_eq(s1.calls_malloc - s0.calls_malloc, 2);
	alloc_free(q);
	char *r = alloc_malloc(140000);                 /* 3 pages: 5 spare more than a quarter */
	ck_assert_ptr_ne(r, p);
	alloc_free(r);
	char *b[LCACHE_N + 1];
	for (int i = 0; i <= LCACHE_N; i++) b[i] = alloc_malloc(200000 + (size_t)i * 70000);
	for (int i = 0; i <= LCACHE_N; i++) alloc_free(b[i]);
	ck_assert_uint_eq(page_of(b[0])->kind, PK_FREE);
	for (int i = 1; i <= LCACHE_N; i++) ck_assert(page_of(b[i])->asked == ASKED_CACHED);
	/* before a request fails for want of room, the caches go back: malloc_trim's way here */
	heap_collect_all();
	for (int i = 1; i <= LCACHE_N; i++) ck_assert_uint_eq(page_of(b[i])->kind, PK_FREE);
}
END_TEST

/* The purger gives a cached block's pages back where the block is (its decay, called here as the
 * purger would once purge_ms passed): the next malloc still gets that block, its pages committed
 * again, reading as zero. */
START_TEST(large_cache_purged_in_place)
{
	const size_t n = (size_t)1 << 20;
	char *p = alloc_malloc(n);
	memset(p, 7, n);
	alloc_free(p);
	region_stats_t a, b;
	region_get_stats(&a);
	ck_assert_uint_eq(large_cache_decay(heap_tls, os_now_ms() + 1000000), UINT64_MAX);
	region_get_stats(&b);
	ck_assert_uint_eq(a.committed - b.committed, n);
	char *q = alloc_malloc(n);
	ck_assert_ptr_eq(p, q);
	region_get_stats(&a);
	ck_assert_uint_eq(a.committed - b.committed, n);
	for (size_t k = 0; k < n; k += 4096) ck_assert_int_eq(q[k], 0);
	alloc_free(q);
}
END_TEST

static void *cache_large_and_exit(void *arg)
{
	(void)arg;
	void *p = alloc_malloc(500000);         /* the thread's first call: it gets a heap */
	alloc_free(p);
	ck_assert(page_of(p)->asked == ASKED_CACHED);
	return p;
}

/* A thread that exits gives its cache back to the runs. */
START_TEST(large_cache_thread_exit)
{
	pthread_t t;
	void *p;
	ck_assert_int_eq(pthread_create(&t, NULL, cache_large_and_exit, NULL), 0);
	ck_assert_int_eq(pthread_join(t, &p), 0);
	ck_assert_uint_eq(page_of(p)->kind, PK_FREE);
}
END_TEST

START_TEST(double_free_cached_large) { void *p = alloc_malloc(200000); alloc_free(p); alloc_free(p); }
END_TEST
START_TEST(realloc_cached_large) { void *p = alloc_malloc(200000); alloc_free(p); alloc_realloc(p, 10); }
END_TEST

START_TEST(aligned)
{
	for (size_t a = 16; a <= ((size_t)4 << 20); a <<= 1) {
		void *p = alloc_memalign(a, 100);
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % a, 0);
		ck_assert(range_has(p));
		alloc_free(p);
	}
}
END_TEST

START_TEST(double_free_small) { void *p = alloc_malloc(32); alloc_free(p); alloc_free(p); }
END_TEST
START_TEST(double_free_large) { void *p = alloc_malloc(1 << 20); alloc_free(p); alloc_free(p); }
END_TEST
START_TEST(interior_free) { char *p = alloc_malloc(64); alloc_free(p + 16); }
END_TEST
/* Interior pointers at 16-byte-aligned offsets inside blocks of several classes (live bits are
 * per block, so none of these has a bit of its own), in a later page of a multi-page run. Each
 * must abort, never free the block around it. */
static const struct { size_t n, at; } interior[] = {
	{ 500, 16 },            /* 512-byte class: 128-byte granules */
	{ 500, 128 },
	{ 600, 128 },           /* 640 = 5 * 128: the second granule of a block */
	{ 600, 256 + 48 },
	{ 1000, 512 },          /* 1024-byte class */
	{ 20000, 16 },          /* 20 KiB class, 2-page runs: 4 KiB granules */
	{ 20000, 4096 },
	{ 20000, 65536 },
};
START_TEST(interior_free_granule)
{
	char *p = alloc_malloc(interior[_i].n);
	memset(p, 1, interior[_i].n);
	alloc_free(p + interior[_i].at);
}
END_TEST
START_TEST(never_handed_out) { alloc_free((void *)(G.base + G.size - 4096)); }
END_TEST

/* Free freed (an 80-byte block), write the 8 bytes at link over its free-list link, as a
 * use-after-free write would, and malloc it and the blocks after: malloc must abort rather than
 * hand out target. */
static void *volatile launder;
static void corrupt_then_malloc(void *freed, const void *link, const void *target)
{
	alloc_free(freed);
	launder = freed;
	memcpy(launder, link, sizeof(uint64_t));
	for (int i = 0; i < 3; i++) ck_assert_ptr_ne(alloc_malloc(80), target);
}

/* The link points at a live block of its page: malloc must not hand it out a second time. */
START_TEST(corrupt_link_onto_live)
{
	void *live = alloc_malloc(80), *freed = alloc_malloc(80);
	corrupt_then_malloc(freed, &live, live);
}
END_TEST

/* The same link written as the library keeps it, a block index in the run: a small number, as a
 * program's own data often is, that names the live block. */
START_TEST(corrupt_link_index_live)
{
	void *live = alloc_malloc(80), *freed = alloc_malloc(80);
	ck_assert_ptr_eq(page_of(live), page_of(freed));
	uint64_t k = block_index(page_of(live), live);
	corrupt_then_malloc(freed, &k, live);
}
END_TEST

/* A small run made on the first page of a freed large block (PF_WASHEAD) has no block at the
 * large block's address, and carves nothing past its page: for every small class, one-page runs
 * and multi-page ones, the blocks malloc hands out from such a run lie inside it and never start
 * where the large block did (blocks of 3 MiB: no thread cache keeps them). */
START_TEST(washead_runs_start_past_the_page)
{
	static const size_t sizes[] = { 16, 32, 48, 80, 128, 1024, 2048, 16384, 45000 };
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		size_t n = sizes[s];
		void *guard1 = alloc_malloc(3 << 20), *big = alloc_malloc(3 << 20), *guard2 = alloc_malloc(3 << 20);
		alloc_free(big);
		ck_assert(page_of(big)->flags & PF_WASHEAD);
		enum { MAXB = 200000 };
		static void *b[MAXB];
		int nb = 0, in = 0;
		while (nb < MAXB && (size_t)nb * n < (size_t)64 << 20) {
			void *p = b[nb++] = alloc_malloc(n);
			ck_assert_ptr_nonnull(p);
			ck_assert_ptr_ne(p, big);
			page_t *h = page_of(p);
			if (h->kind != PK_SMALL) h -= h->head_off;
			if (page_addr(page_idx(h)) != (uintptr_t)big) continue;
			in++;
			ck_assert_uint_ge((uintptr_t)p, h->start);
			ck_assert_uint_le((uintptr_t)p + h->block_size, (uintptr_t)big + run_bytes(h));
			if (in >= (int)class_blocks[h->cls]) break;
		}
		ck_assert_msg(in > 0, "no %zu-byte block came from the freed large block's pages", n);
		for (int i = 0; i < nb; i++) alloc_free(b[i]);
		alloc_free(guard1);
		alloc_free(guard2);
	}
}
END_TEST

START_TEST(corrupt_link_misaligned)
{
	char *live = alloc_malloc(80), *freed = alloc_malloc(80);
	void *bad = live + 8;
	corrupt_then_malloc(freed, &bad, bad);
}
END_TEST

static void *free_it(void *p) { alloc_free(p); return NULL; }
static void free_elsewhere(void *p)          /* free p from another thread, and wait for it */
{
	pthread_t t;
	pthread_create(&t, NULL, free_it, p);
	pthread_join(t, NULL);
}

START_TEST(double_free_remote)
{
	void *p = alloc_malloc(32);
	alloc_free(p);
	free_elsewhere(p);
}
END_TEST

/* Freed twice by other threads before the owner collects: the second free's atomic or finds the
 * bit set. */
START_TEST(double_free_remote_twice)
{
	void *p = alloc_malloc(32);
	free_elsewhere(p);
	free_elsewhere(p);
}
END_TEST

/* Freed by another thread, then by the owner before it collects (the live bit is still set):
 * caught when the owner takes the remote free back. */
START_TEST(double_free_remote_then_local)
{
	void *p = alloc_malloc(32);
	free_elsewhere(p);
	alloc_free(p);
	heap_collect_all();
}
END_TEST

/* Live bits are numbered by block index: exactly the blocks handed out have their bit set, and
 * the bitmap of a class of blocks that are not a power of two is as short as its block count. */
START_TEST(live_bits_per_block)
{
	static const size_t sizes[] = { 48, 150, 300, 700, 3000 };
	for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		void *p[40];
		for (int i = 0; i < 40; i++) p[i] = alloc_malloc(sizes[s]);
		page_t *pg = page_of(p[0]);
		if (pg->kind == PK_CONT) pg -= pg->head_off;
		ck_assert_int_eq(pg->kind, PK_SMALL);
		unsigned set = 0;
		for (unsigned w = 0; w < (pg->capacity + 63u) / 64u; w++) set += (unsigned)__builtin_popcountll(page_live(pg)[w]);
		ck_assert_uint_eq(set, page_hot(pg)->used & USED_MASK);
		for (unsigned w = (pg->capacity + 63u) / 64u; w < LIVE_BITS / 64u; w++) ck_assert_uint_eq(page_live(pg)[w], 0);
		for (int i = 0; i < 40; i++) {
			page_t *h = page_of(p[i]);
			if (h->kind == PK_CONT) h -= h->head_off;
			uintptr_t off = (uintptr_t)p[i] - h->start;
			uint64_t k = off / h->block_size;
			ck_assert_uint_eq(off % h->block_size, 0);
			ck_assert_uint_eq(block_index(h, p[i]), k);
			ck_assert(live_test(h, k));
			alloc_free(p[i]);
			ck_assert(!live_test(h, k));
		}
	}
}
END_TEST

START_TEST(class_tables) { ck_assert(heap_tables_ok()); }
END_TEST

START_TEST(outside_pointer_ignored)
{
	static char stat[64];
	alloc_free(stat + 16);
	alloc_free(NULL);
}
END_TEST

Suite *heap_suite(void)
{
	Suite *s = suite_create("heap");
	TCase *t = tcase_create("blocks");
	/* the racing tests take 9-14 s on an idle 2-core machine: room for a loaded, slower one */
	tcase_set_timeout(t, 300);
	tcase_add_test(t, small_blocks);
	tcase_add_test(t, freed_block_reused);
	tcase_add_test(t, remote_frees_come_back);
	tcase_add_test(t, handed_off_runs_go_back);
	tcase_add_test(t, idle_class_runs_go_back);
	tcase_add_test(t, remote_frees_set_freed_bits);
	tcase_add_test(t, remote_frees_race_with_collection);
	tcase_add_test(t, freeing_thread_adopts_at_first_malloc);
	tcase_add_test(t, freeing_thread_adopts_the_owner_heap);
	tcase_add_test(t, fork_between_collect_stores);
	tcase_add_test(t, thread_exit_then_free_elsewhere);
	tcase_add_test(t, exit_while_freed_remotely);
	tcase_add_test(t, usable_size_of_freed_blocks);
	tcase_add_test(t, call_counts_exact);
	tcase_add_test(t, spare_keeps_its_carved_blocks);
	tcase_add_test(t, large_blocks_and_realloc_in_place);
	tcase_add_test(t, large_cache_reuse);
	tcase_add_test(t, large_cache_purged_in_place);
	tcase_add_test(t, large_cache_thread_exit);
	tcase_add_test(t, aligned);
	tcase_add_test(t, outside_pointer_ignored);
	tcase_add_test(t, live_bits_per_block);
	tcase_add_test(t, class_tables);
	tcase_add_test(t, washead_runs_start_past_the_page);
	suite_add_tcase(s, t);
	TCase *m = tcase_create("misuse");
	tcase_add_test_raise_signal(m, double_free_small, SIGABRT);
	tcase_add_test_raise_signal(m, double_free_large, SIGABRT);
	tcase_add_test_raise_signal(m, double_free_cached_large, SIGABRT);
	tcase_add_test_raise_signal(m, realloc_cached_large, SIGABRT);
	tcase_add_test_raise_signal(m, interior_free, SIGABRT);
	tcase_add_loop_test_raise_signal(m, interior_free_granule, SIGABRT, 0, (int)(sizeof interior / sizeof interior[0]));
	tcase_add_test_raise_signal(m, never_handed_out, SIGABRT);
	tcase_add_test_raise_signal(m, double_free_remote, SIGABRT);
	tcase_add_test_raise_signal(m, double_free_remote_twice, SIGABRT);
	tcase_add_test_raise_signal(m, double_free_remote_then_local, SIGABRT);
	tcase_add_test_raise_signal(m, corrupt_link_onto_live, SIGABRT);
	tcase_add_test_raise_signal(m, corrupt_link_misaligned, SIGABRT);
	tcase_add_test_raise_signal(m, corrupt_link_index_live, SIGABRT);
	suite_add_tcase(s, m);
	return s;
}
