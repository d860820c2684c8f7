/* stop.c - stopping the other threads for the leak check's scan: a real-time signal parks each
 * in its handler (registers and stack pointer saved for the scan) until stop_resume(); threads the
 * signal cannot reach are watched through /proc instead, and must sleep through the scan. */
#include "stop.h"
#include "range.h"
#include "fmt.h"
#include "os.h"
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#define SC(nr, a, b, c, d, e, f) os_syscall6((nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

#define MAX_THREADS 16384               /* with more, the check is skipped */
#define ANSWER_MS   2000                /* how long a runnable thread has to park itself (a loaded
                                           machine may not run it for a while) */
#define IDLE_MS     500                 /* how long a thread not stopped has to be found idle */
#define PARK_MAX_MS 60000               /* a parked thread leaves on its own after this long */

enum { SIGNALLED, PARKED, LEFT, LOOSE };

typedef struct tslot {
	_Atomic(int) tid;
	_Atomic(int) state;                 /* SIGNALLED; PARKED (t valid); LEFT the handler, or gone;
	                                       LOOSE: blocked the signal when sent, or the program
	                                       handles it */
	bool watched;                       /* not stopped when last looked at (loose_threads) */
	uint64_t ran;                       /* watched: its run time (ns) then */
	stop_thread_t t;
} tslot_t;

static tslot_t *slots;
static _Atomic(int) nslots;
static _Atomic(int) parking;            /* futex word: 1 while signalled threads must stay parked */
static int park_sig;
static int park_installed;              /* 1 ours, -1 the program's own handler: none stopped */

static void park_handler(int sig, siginfo_t *si, void *ucv)
{
	(void)sig; (void)si;
	if (!atomic_load(&parking)) return;
	int tid = (int)os_gettid();
	tslot_t *s = NULL;
	for (int i = 1; i < atomic_load(&nslots); i++)
		if (atomic_load(&slots[i].tid) == tid) { s = &slots[i]; break; }
	int st = s ? atomic_load(&s->state) : LEFT;
	if (st != SIGNALLED && st != LOOSE) return;   /* LOOSE: it blocked the signal until now */
	ucontext_t *uc = ucv;
#if defined(__x86_64__)
	_Static_assert(NGREG <= STOP_NREGS, "registers fit");
	for (int r = 0; r < NGREG; r++) s->t.regs[r] = (uintptr_t)uc->uc_mcontext.gregs[r];
	s->t.sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
	for (int r = 0; r < 31 && r < STOP_NREGS; r++) s->t.regs[r] = (uintptr_t)uc->uc_mcontext.regs[r];
	s->t.sp = (uintptr_t)uc->uc_mcontext.sp;
#else
	(void)uc;
	s->t.sp = 0;                        /* unknown: its whole stack mapping is scanned */
#endif
	atomic_store(&s->state, PARKED);
	uint64_t t0 = os_now_ms();
	while (atomic_load(&parking) && os_now_ms() - t0 < PARK_MAX_MS) {
		struct timespec ts = { 1, 0 };
		SC(SYS_futex, &parking, FUTEX_WAIT_PRIVATE, 1, &ts, 0, 0);
	}
	atomic_store(&s->state, LEFT);
}

static bool have_tid(int tid)
{
	for (int i = 0; i < atomic_load(&nslots); i++)
		if (atomic_load(&slots[i].tid) == tid) return true;
	return false;
}

/* /proc/self/task/TID/<file> into buf (NUL-terminated); its length, 0 when unreadable, -1 when
 * the thread is gone. */
static long task_file(int tid, const char *file, char *buf, size_t cap)
{
	char path[64];
	fmtbuf_t b;
	fmt_init(&b, path, sizeof path);
	fmt_str(&b, "/proc/self/task/");
	fmt_dec(&b, (uint64_t)tid);
	fmt_char(&b, '/');
	fmt_str(&b, file);
	int fd = os_open_read(path);
	if (fd == -ENOENT || fd == -ESRCH) return -1;
	if (fd < 0) return 0;
	long n = os_read(fd, buf, cap - 1);
	os_close(fd);
	if (n <= 0) return 0;
	buf[n] = 0;
	return n;
}

/* Whether thread tid blocks sig (SigBlk in /proc/self/task/TID/status): it would never answer,
 * and waiting for it would only delay the exit. */
static bool signal_blocked(int tid, int sig)
{
	char buf[2048];
	if (task_file(tid, "status", buf, sizeof buf) <= 0) return false;
	const char *p = strstr(buf, "SigBlk:");
	if (!p) return false;
	p += 7;
	while (*p == ' ' || *p == '\t') p++;
	uint64_t mask = 0;
	for (; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
		mask = mask << 4 | (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
	return (mask >> (sig - 1)) & 1;
}

/* Lists every thread of /proc/self/task not listed yet and, when send, signals it; returns how
 * many were signalled, or -1 when the threads cannot all be listed. */
static int signal_new_threads(int self, int pid, bool send)
{
	char buf[4096];
	int fd = os_open_read("/proc/self/task");
	int fresh = 0;
	if (fd < 0) return -1;
	for (;;) {
		long n = SC(SYS_getdents64, fd, buf, sizeof buf, 0, 0, 0);
		if (n <= 0) break;
		for (long off = 0; off < n;) {
			const char *ent = buf + off;
			unsigned short reclen;
			memcpy(&reclen, ent + 16, sizeof reclen);
			const char *name = ent + 19;
			off += reclen;
			int tid = 0;
			for (const char *c = name; *c >= '0' && *c <= '9'; c++) tid = tid * 10 + (*c - '0');
			if (tid <= 0 || tid == self || have_tid(tid)) continue;
			int k = atomic_load(&nslots);
			if (k >= MAX_THREADS) { fresh = -1; continue; }   /* neither stopped nor watched */
			memset(&slots[k], 0, sizeof slots[k]);
			atomic_store(&slots[k].tid, tid);
			atomic_store(&nslots, k + 1);
			/* A thread that blocks the signal is not waited for (a pool thread may block it for
			 * good), but it is sent the signal all the same: one that blocks it for a moment (a
			 * thread starting up runs with every signal blocked) parks when it unblocks it. */
			bool blocked = !send || signal_blocked(tid, park_sig);
			if (blocked) atomic_store(&slots[k].state, LOOSE);
			if (!send) continue;
			if (SC(SYS_tgkill, pid, tid, park_sig, 0, 0, 0) != 0) atomic_store(&slots[k].state, LEFT);   /* gone */
			else if (!blocked) fresh++;
		}
	}
	os_close(fd);
	return fresh;
}

static bool tasks_unlisted;             /* signal_new_threads failed: nothing can be trusted */

/* How far thread tid has run: its run time in ns (schedstat, which advances at scheduler ticks
 * only); UINT64_MAX while it is running or runnable (state R in stat) or cannot be read; GONE
 * once it has exited (it can run no more code of the program's). */
#define GONE (UINT64_MAX - 1)
static uint64_t thread_ran(int tid)
{
	char buf[512];
	long n = task_file(tid, "stat", buf, sizeof buf);
	if (n < 0) return GONE;
	if (n == 0) return UINT64_MAX;
	const char *st = strrchr(buf, ')');       /* the name may hold anything, but not after ')' */
	if (st && st[1] == ' ' && (st[2] == 'Z' || st[2] == 'X')) return GONE;
	if (!st || st[1] != ' ' || st[2] == 'R' || st[2] == 0) return UINT64_MAX;
	n = task_file(tid, "schedstat", buf, sizeof buf);
	if (n < 0) return GONE;
	if (n == 0 || buf[0] < '0' || buf[0] > '9') return UINT64_MAX;
	uint64_t v = 0;
	for (const char *c = buf; *c >= '0' && *c <= '9'; c++) v = v * 10 + (uint64_t)(*c - '0');
	return v;
}

static void signal_all(void)
{
	int self = (int)os_gettid(), pid = (int)getpid();
	park_sig = SIGRTMAX - 3;
	if (!park_installed) {
		struct sigaction sa, old;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = park_handler;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigfillset(&sa.sa_mask);
		sigaction(park_sig, &sa, &old);
		/* A program's own handler would get our signal: then we do not stop threads. Once ours is
		 * installed it stays (it returns at once outside a check), so a late signal is harmless. */
		if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
			sigaction(park_sig, &old, NULL);
			park_installed = -1;
		} else
			park_installed = 1;
	}
	if (park_installed < 0) {
		tasks_unlisted = signal_new_threads(self, pid, false) < 0;   /* listed, none stopped */
		return;
	}
	atomic_store(&parking, 1);
	/* threads started meanwhile are caught by the next round */
	for (int round = 0; round < 4; round++) {
		int fresh = signal_new_threads(self, pid, true);
		if (fresh < 0) tasks_unlisted = true;
		if (fresh <= 0) break;
		uint64_t t0 = os_now_ms();
		for (int spin = 1;; spin++) {
			int waiting = 0;
			for (int i = 1; i < atomic_load(&nslots); i++) {
				if (atomic_load(&slots[i].state) != SIGNALLED) continue;
				/* one that exited meanwhile (a thread ending as the program exits) never
				 * answers: every 10 ms, look whether it is gone rather than wait 2 s */
				if (spin % 10 == 0 && thread_ran(atomic_load(&slots[i].tid)) == GONE) {
					int sig = SIGNALLED;
					atomic_compare_exchange_strong(&slots[i].state, &sig, LEFT);
					continue;
				}
				waiting++;
			}
			if (!waiting || os_now_ms() - t0 > ANSWER_MS) break;
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
}

/* Threads that were not stopped (they block the signal, the program handles it, or they did not
 * answer in time) keep running: a scan while one of them allocates reads descriptors it is
 * rewriting, and could report a block it holds. Such a thread is let be only while it does not
 * run: its run time is taken before the scan (mark), and compared after it. Marking returns
 * how many there are; comparing, how many of them ran (parked meanwhile, or are gone) since. */
static int loose_threads(bool mark)
{
	int ran = 0;
	for (int i = 1; i < atomic_load(&nslots); i++) {
		tslot_t *s = &slots[i];
		int st = atomic_load(&s->state);
		if (mark) {
			s->watched = st == SIGNALLED || st == LOOSE;
			if (!s->watched) continue;
			s->ran = thread_ran(atomic_load(&s->tid));
			if (s->ran == GONE) {   /* exited: stopped for good */
				s->watched = false;
				atomic_store(&s->state, LEFT);
				continue;
			}
			ran++;                  /* marking counts the rest */
		} else if (s->watched) {
			uint64_t t = st == PARKED ? UINT64_MAX : thread_ran(atomic_load(&s->tid));
			if (t != GONE && (t == UINT64_MAX || t != s->ran)) ran++;
		}
	}
	return ran;
}

static void release_parked(void)
{
	atomic_store(&parking, 0);
	SC(SYS_futex, &parking, FUTEX_WAKE_PRIVATE, 0x7fffffff, 0, 0, 0);
	/* let the parked ones leave the handler before the slots are reused */
	uint64_t t0 = os_now_ms();
	for (int i = 1; i < atomic_load(&nslots); i++)
		while (atomic_load(&slots[i].state) == PARKED && os_now_ms() - t0 < 1000) sched_yield();
}

static void pd_layout_once(void);

stop_result_t stop_world(uintptr_t sp, const volatile uintptr_t *regs, int nregs)
{
	pd_layout_once();
	if (!slots && !(slots = meta_alloc(MAX_THREADS * sizeof *slots))) return STOP_NOMEM;
	memset(&slots[0], 0, sizeof slots[0]);
	atomic_store(&slots[0].tid, (int)os_gettid());
	slots[0].t.sp = sp;
	for (int r = 0; r < nregs && r < STOP_NREGS; r++) slots[0].t.regs[r] = regs[r];
	atomic_store(&nslots, 1);
	tasks_unlisted = false;
	signal_all();
	if (tasks_unlisted) {
		release_parked();
		return STOP_NOTASKS;
	}
	/* threads not stopped must be idle: quiet for 2 ms; up to IDLE_MS for one just going to sleep
	 * to get there, or for one that blocked the signal for a moment to unblock it and park */
	uint64_t t0 = os_now_ms();
	do {
		if (!loose_threads(true)) return STOP_QUIET;   /* every other thread is stopped */
		struct timespec pause = { 0, 2000000 };
		nanosleep(&pause, NULL);
		if (!loose_threads(false)) return STOP_QUIET;
	} while (os_now_ms() - t0 < IDLE_MS);
	release_parked();
	return STOP_RUNNING;
}

bool stop_resume(void)
{
	int loose = loose_threads(false);
	release_parked();
	return loose == 0;
}

int stop_threads_n(void) { return atomic_load(&nslots); }

const stop_thread_t *stop_thread(int i)
{
	if (i < 0 || i >= atomic_load(&nslots)) return NULL;
	return i == 0 || atomic_load(&slots[i].state) == PARKED ? &slots[i].t : NULL;
}

/* ---- stacks of ended threads ---- */
/* glibc describes its struct pthread to libthread_db through these (a field: bits, count,
 * offset; the size in bytes). On x86-64 the descriptor sits at the top of a thread's stack
 * mapping and starts with two pointers to itself (tcbhead_t's tcb and self); its tid is the
 * thread's while it runs, 0 once it has exited (the kernel clears it), -1 once its stack is
 * cached for reuse. */
static uint32_t pd_tid_off, pd_size;    /* 0: unknown, nothing is taken for a dead stack */

/* Learns the descriptor's layout, once, before the first stop (the other threads still run:
 * one parked in the loader must not hold its lock while dlsym waits for it). */
static void pd_layout_once(void)
{
	static bool done;
	if (done) return;
	done = true;
#if defined(__x86_64__)
	const uint32_t *tid = dlsym(RTLD_DEFAULT, "_thread_db_pthread_tid");
	const uint32_t *size = dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread");
	if (tid && size && tid[0] == 32 && tid[1] == 1 && size[0] >= 64 && size[0] <= 65536 &&
	    tid[2] >= 24 && tid[2] + 4 <= size[0]) {
		pd_tid_off = tid[2];
		pd_size = size[0];
	}
#endif
}

uintptr_t stop_dead_stack(uintptr_t lo, uintptr_t hi)
{
	if (!pd_size || hi - lo < (uintptr_t)pd_size + 64) return 0;
	/* the descriptor is at the top, aligned down to the static TLS alignment (64 or more) */
	uintptr_t a = (hi - pd_size) & ~(uintptr_t)63;
	for (int k = 0; k < 64 && a >= lo; k++, a -= 64) {
		const uintptr_t *q = (const uintptr_t *)a;
		if (q[0] != a || q[2] != a) continue;
		int32_t tid = *(const int32_t *)(a + pd_tid_off);
		return tid <= 0 ? a : 0;
	}
	return 0;
}
