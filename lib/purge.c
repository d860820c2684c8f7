/* purge.c - freed pages go back to the OS: decay by CONTIG_PURGE_MS, the background purger
 * thread, purging now (malloc_trim, contig_purge), and the limit on committed pages. Part of
 * the page layer: runs under the range lock, walking the free bins of runs.c. */
#include "region_int.h"
#include "cgroup.h"
#include "fmt.h"
#include "os.h"
#include <signal.h>
#include <time.h>
#include <unistd.h>

/* ts moved on by ns nanoseconds (any amount), normalised. */
static void ts_add_ns(struct timespec *ts, uint64_t ns)
{
	ts->tv_sec += (time_t)(ns / 1000000000u);
	ts->tv_nsec += (long)(ns % 1000000000u);
	if (ts->tv_nsec >= 1000000000L) { ts->tv_sec++; ts->tv_nsec -= 1000000000L; }
}

static pthread_cond_t purge_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t fill_cond = PTHREAD_COND_INITIALIZER;   /* a chunk was faulted in */
static int purger;                  /* 0 none, 1 starting or running */
static pthread_t purger_thread;     /* the last one started, joined before the next starts */
static bool purger_joinable;
static uint64_t purger_until;       /* the purger waits until this ms clock (UINT64_MAX: for
                                       work, a while), 0: it is not waiting */
static _Atomic(int) purger_deferred; /* wanted while the freeing thread held a library lock */
static long purger_pid;             /* the process whose threads may start the purger */
static uint64_t (*decay_fn)(uint64_t now);  /* the heaps' decay (region_set_decay) */
static uint64_t decay_due = UINT64_MAX;     /* when the purger calls it next (ms clock) */

void purge_fork_child(void)
{
	/* the purger did not come along: the child starts its own when it frees pages */
	purger = 0;
	purger_until = 0;
	purger_pid = (long)getpid();
	atomic_store(&purger_deferred, 0);
	purger_joinable = false;            /* the parent's purger is no thread of the child's */
	/* a chunk the purger was faulting in stays to be faulted in (again) by the child's purger */
	R.fill_busy = false;
	pthread_cond_init(&fill_cond, NULL);
	/* a decay still due stays due: the child's purger, once one starts, runs it */
}

/* The dirty pages of [idx, idx + n) back to the OS, each stretch in one call; how many there were.
 * A chunk with purged pages must not be refilled by khugepaged (huge.c): its advice goes too. */
static size_t purge_pages_locked(size_t idx, size_t n)
{
	size_t done = 0;
	for (size_t i = idx; i < idx + n;) {
		if (!(P(i)->flags & PF_DIRTY)) { i++; continue; }
		size_t j = i;
		while (j < idx + n && (P(j)->flags & PF_DIRTY)) P(j++)->flags &= (uint8_t)~PF_DIRTY;
		os_decommit(page_addr(i), (j - i) << PAGE_SHIFT);
		done += j - i;
		i = j;
	}
	huge_unadvise_locked(idx, idx + n);
	return done;
}

/* Give back the dirty pages of recycled free run idx. The run stays where it is, in its bin and
 * its set: purging never merges or moves a run, so where the next block or mapping goes never
 * depends on when the purger ran (SPEC, Determinism: a program that sleeps between its frees and
 * its next mallocs got other addresses on another run). */
static size_t purge_run(size_t idx)
{
	page_t *h = P(idx);
	size_t n = h->npages, done = purge_pages_locked(idx, n);
	/* unmapped served pages in it (PROT_NONE islands) become plain free pages again: their
	 * kernel mappings merge back into the range's (SPEC, Scale) */
	range_open(idx, idx + n);
	h->stamp = CLEAN_STAMP;
	R.dirty_runs--;
	R.committed -= done;
	R.purged += done;
	return done;
}

/* A freed large block a thread's cache holds (large_cache.c) gives its dirty pages back where it
 * is, as a free run would: the cache keeps it in its slot, so where the next block goes never
 * depends on when this ran. The caller has the block to itself. */
void region_purge_block(page_t *h)
{
	range_lock();
	size_t done = purge_pages_locked(page_idx(h), h->npages);
	R.committed -= done;
	R.purged += done;
	range_unlock();
}

/* Such a block, purged, is handed out again: its pages count as committed once more. False, and
 * nothing done, when that would pass CONTIG_LIMIT (the caller frees the block and asks the runs,
 * which make room or refuse as for any block). */
bool region_recommit_block(page_t *h)
{
	size_t idx = page_idx(h), n = h->npages, clean = 0;
	range_lock();
	for (size_t i = idx; i < idx + n; i++) clean += !(P(i)->flags & PF_DIRTY);
	bool ok = !R.limit || R.committed + clean <= R.limit;
	if (ok) {
		for (size_t i = idx; i < idx + n; i++) P(i)->flags |= PF_DIRTY;
		R.committed += clean;
		if (R.committed > R.committed_peak) R.committed_peak = R.committed;
	}
	range_unlock();
	return ok;
}

/* Purge the free runs freed at least purge_ms ago (all of them when all). */
size_t purge_locked(bool all)
{
	uint64_t now = os_now_ms();
	uint64_t next = UINT64_MAX;
	size_t done = 0;
	if (!R.dirty_runs) { R.next_purge = UINT64_MAX; return 0; }
	for (unsigned b = 0; b < NBINS; b++) {
		for (uint32_t i = R.bin[1][b], nx; i; i = nx) {
			page_t *h = P(i - 1);
			nx = h->next;
			if (h->stamp == CLEAN_STAMP) continue;          /* purged already */
			uint32_t age = (uint32_t)now - h->stamp;        /* wraps safely every 49 days */
			if (all || age >= G.cfg.purge_ms)
				done += purge_run(i - 1);
			else if (now + (G.cfg.purge_ms - age) < next)
				next = now + (G.cfg.purge_ms - age);
		}
	}
	R.next_purge = next;
	if (done) release_top_locked(true);
	return done;
}

void maybe_purge_locked(void)
{
	if (R.next_purge != UINT64_MAX && os_now_ms() >= R.next_purge)
		purge_locked(false);
}

/* The open chunk's untaken runs and the chunk ahead go back, to be purged by the caller at once:
 * no purger is wanted for them (huge_stash_release_locked may have claimed its start). */
static void stash_release_now_locked(void)
{
	if (huge_stash_release_locked()) purger = 0;
}

void huge_fill_wait_locked(void)
{
	while (R.fill_busy) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts_add_ns(&ts, 10000000u);
		range_wait(&fill_cond, &ts);
	}
}

size_t region_purge(bool all)
{
	range_lock();
	if (all) {
		huge_fill_wait_locked();
		stash_release_now_locked();
	}
	size_t n = purge_locked(all);
	range_unlock();
	return n << PAGE_SHIFT;
}

/* A free run just became dirty, its pages freed at stamp (now, or earlier: region_free_since):
 * it is due purge_ms after that, and an idle purger must know. */
void purge_due_locked(uint32_t stamp)
{
	uint64_t now = os_now_ms();
	uint32_t age = (uint32_t)now - stamp;           /* wraps safely, as purge_locked's */
	uint64_t due = now - (age < now ? age : now) + G.cfg.purge_ms;
	if (due < R.next_purge) R.next_purge = due;
	if (due < purger_until) pthread_cond_signal(&purge_cond);
}

/* Taking n more clean pages would pass the limit: purge everything free first. True when the
 * n pages fit then (every free page is clean now); false, counted and logged, when not (unless
 * the caller will try again: limit_retry). */
bool limit_make_room_locked(size_t n)
{
	stash_release_now_locked();
	purge_locked(true);
	if (R.committed + n <= R.limit) return true;
	limit_refused = 1;
	if (limit_retry) return false;
	R.limit_hits++;
	if (G.cfg.verbose) log_line("CONTIG_LIMIT reached: allocation refused with ENOMEM");
	return false;
}

void region_set_limit_pages(size_t pages) { R.limit = pages; }

void purge_init_limit(void)
{
	purger_pid = (long)getpid();
	const config_t *c = &G.cfg;
	char buf[300];
	fmtbuf_t b;

	if (c->limit_kind == LIMIT_SIZE)
		R.limit = align_up(c->limit, PAGE_SIZE) >> PAGE_SHIFT;
	else if (c->limit_kind == LIMIT_CGROUP) {
		char where[300] = "";
		size_t lim = cgroup_memory_limit(where, sizeof where);
		fmt_init(&b, buf, sizeof buf);
		if (!lim) {
			fmt_str(&b, "CONTIG_LIMIT=cgroup: the process's memory cgroup has no limit; no limit");
		} else {
			/* Headroom for what the cgroup charges that is not the heap: binaries, stacks,
			 * page cache, other processes. An eighth of the limit, at least 16 MiB. */
			size_t head = lim / 8 < ((size_t)16 << 20) ? ((size_t)16 << 20) : lim / 8;
			size_t eff = lim > 2 * head ? lim - head : lim / 2;
			R.limit = eff >> PAGE_SHIFT;
			if (!R.limit) R.limit = 1;
			fmt_str(&b, "CONTIG_LIMIT=cgroup: ");
			fmt_str(&b, where);
			fmt_str(&b, " is ");
			fmt_size(&b, lim);
			fmt_str(&b, "; heap limit ");
			fmt_size(&b, R.limit << PAGE_SHIFT);
			fmt_str(&b, " (headroom ");
			fmt_size(&b, lim - (R.limit << PAGE_SHIFT));
			fmt_char(&b, ')');
		}
		log_verbose(buf);
	}

}

/* The purger: freed pages go back to the OS within purge_ms even when the program makes no
 * further call. Started on the first free of pages; never touches the heaps. */
static void *purger_main(void *arg)
{
	(void)arg;
	range_lock();
	for (;;) {
		maybe_purge_locked();
		if (R.filling && !R.fill_busy) {
			/* a chunk to fault in ahead of need (huge.c): no lock while the kernel works */
			page_t *c = R.filling;
			R.fill_busy = true;
			range_unlock();
			huge_fill(page_addr(page_idx(c)));
			range_lock();
			R.fill_busy = false;
			R.filling = NULL;
			R.ahead = c;
			pthread_cond_broadcast(&fill_cond);
			continue;
		}
		uint64_t t = os_now_ms();
		if (decay_due <= t) {
			/* the heaps' decay takes the heaps' locks and frees runs: not under this one */
			decay_due = UINT64_MAX;
			range_unlock();
			uint64_t next = decay_fn(t);
			range_lock();
			if (next < decay_due) decay_due = next;
			continue;
		}
		if (R.next_purge == UINT64_MAX && decay_due == UINT64_MAX && !R.filling) {
			/* Nothing dirty: linger a little, then end, so that the purger never keeps a
			 * process alive whose last thread has gone (pthread_exit from main, a child
			 * forked from a thread). The next free of pages starts it again. */
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts_add_ns(&ts, 200000000u);
			purger_until = UINT64_MAX;
			range_wait(&purge_cond, &ts);
			purger_until = 0;
			if (R.next_purge == UINT64_MAX && decay_due == UINT64_MAX && !R.filling) {
				purger = 0;
				range_unlock();
				return NULL;
			}
			continue;
		}
		uint64_t due = R.next_purge < decay_due ? R.next_purge : decay_due;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t now = os_now_ms();
		uint64_t wait = due > now ? due - now : 0;
		ts_add_ns(&ts, (wait + 2) * 1000000u);   /* past the coarse clock's tick */
		purger_until = due;       /* an earlier due time wakes it (purge_due_locked) */
		range_wait(&purge_cond, &ts);
		purger_until = 0;
	}
	return NULL;
}

void purger_start(void)
{
	pthread_condattr_t ca;
	pthread_attr_t at;
	pthread_t t;
	/* The purger before this one has ended (it gave up its claim) or is ending: wait for it to be
	 * gone, so that glibc takes its stack, cached with its TLS, instead of allocating another
	 * thread's TLS vector through this thread's calloc. An allocation here only when the old
	 * thread was a few instructions from its end made where later blocks go depend on timing
	 * (SPEC, Determinism; a program pausing about as long as the purger lingers, 1 run in 20). */
	if (purger_joinable) {
		pthread_join(purger_thread, NULL);
		purger_joinable = false;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&purge_cond, &ca);
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 << 10);
	/* Every signal blocked in the purger (it inherits the mask it is created with): a signal
	 * the program blocks in its own threads to take with sigwait or signalfd would otherwise
	 * be delivered to the purger and kill the process, and a handler run on the purger while
	 * it holds the range lock would deadlock on its first malloc. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, &at, purger_main, NULL) != 0) {
		purger = 0;
	} else {
		purger_thread = t;
		purger_joinable = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
}

/* After pages were freed: start the purger when none runs and it may be started here: not
 * while leaks are tracked (its TLS would show as a leak), nor while this thread holds a library
 * lock (pthread_create allocates). */
bool purger_wanted_locked(void)
{
	if (purger || (!R.dirty_runs && decay_due == UINT64_MAX && !R.filling) || !purger_may_run())
		return false;
	if (locks_held) {
		/* for whoever drops the lock (region_purger_kick): a program that frees into an
		 * abandoned heap and then idles would otherwise keep the pages for good */
		atomic_store_explicit(&purger_deferred, 1, memory_order_relaxed);
		return false;
	}
	atomic_store_explicit(&purger_deferred, 0, memory_order_relaxed);
	purger = 1;
	return true;
}

void region_set_decay(uint64_t (*fn)(uint64_t now)) { decay_fn = fn; }

/* Not without a purge delay, nor while leaks are tracked (its TLS would show as a leak), nor in a
 * child made by a raw clone(2), not fork(): no atfork handler ran for it, and with CLONE_VM it is
 * not a thread glibc knows: pthread_create there hung the child (and the parent waiting for it).
 * Its freed pages go back on its next calls instead. */
bool purger_may_run(void)
{
	return G.cfg.purge_ms && !G.slow_only && (long)getpid() == purger_pid;
}

void purger_wake_locked(void)
{
	if (purger_until) pthread_cond_signal(&purge_cond);
}

/* A decay can run: there is a purge delay, and a purger this process may start (not while
 * leaks are tracked, not in a raw clone child: purger_wanted_locked). */
bool region_decay_ok(void) { return decay_fn && purger_may_run(); }

/* Called with no library lock held (the purger may be started here). */
void region_decay_at(uint64_t due_ms)
{
	range_lock();
	if (due_ms < decay_due) decay_due = due_ms;
	if (due_ms < purger_until) pthread_cond_signal(&purge_cond);
	bool start = purger_wanted_locked();
	range_unlock();
	if (start) purger_start();
}

void region_purger_kick(void)
{
	if (likely(!atomic_load_explicit(&purger_deferred, memory_order_relaxed)) || locks_held) return;
	range_lock();
	bool start = purger_wanted_locked();
	range_unlock();
	if (start) purger_start();
}
