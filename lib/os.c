/* os.c - raw system calls for the library's own mappings: no errno, no allocation, no libc
 * wrappers that an interposer (including ours) could catch. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "os.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

long os_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile ("syscall"
		: "=a"(ret)
		: "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
		: "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile ("svc 0"
		: "+r"(x0)
		: "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
		: "memory");
	return x0;
#else
	int saved = errno;
	long ret = syscall(nr, a, b, c, d, e, f);
	if (ret == -1) ret = -errno;
	errno = saved;
	return ret;
#endif
}

#define SC(nr, a, b, c, d, e, f) os_syscall6((nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

void *os_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)SC(SYS_mmap, addr, len, prot, flags, fd, off);
}

int os_munmap(void *addr, size_t len) { return (int)SC(SYS_munmap, addr, len, 0, 0, 0, 0); }
int os_mprotect(void *addr, size_t len, int prot) { return (int)SC(SYS_mprotect, addr, len, prot, 0, 0, 0); }
int os_madvise(void *addr, size_t len, int advice) { return (int)SC(SYS_madvise, addr, len, advice, 0, 0, 0); }

void *os_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *newaddr)
{
	return (void *)SC(SYS_mremap, old, oldlen, newlen, flags, newaddr, 0);
}

int os_open_read(const char *path)
{
	return (int)SC(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
}

int os_open_proc(const char *name)
{
	char path[64];
	static const char ts[] = "/proc/thread-self/", ps[] = "/proc/self/";
	size_t n = strlen(name);
	if (n + sizeof ts > sizeof path) return -ENAMETOOLONG;
	memcpy(path, ts, sizeof ts - 1);
	memcpy(path + sizeof ts - 1, name, n + 1);
	int fd = os_open_read(path);
	if (fd != -ENOENT) return fd;
	memcpy(path, ps, sizeof ps - 1);
	memcpy(path + sizeof ps - 1, name, n + 1);
	return os_open_read(path);
}

long os_read(int fd, void *buf, size_t n)
{
	long r;
	do r = SC(SYS_read, fd, buf, n, 0, 0, 0); while (r == -EINTR);
	return r;
}

int os_lines_open(os_lines_t *l, const char *path)
{
	l->fd = strncmp(path, "proc:", 5) == 0 ? os_open_proc(path + 5) : os_open_read(path);
	l->len = l->pos = 0;
	l->eof = 0;
	return l->fd < 0 ? l->fd : 0;
}

int os_lines_next(os_lines_t *l, char *line, size_t n)
{
	size_t i = 0;
	for (;;) {
		if (l->pos < l->len) {
			const char *s = l->buf + l->pos, *nl = memchr(s, '\n', l->len - l->pos);
			size_t k = nl ? (size_t)(nl - s) : l->len - l->pos, c = k < n - 1 - i ? k : n - 1 - i;
			memcpy(line + i, s, c);
			i += c;
			l->pos += k + (nl != NULL);
			if (nl) { line[i] = 0; return 1; }
		}
		if (l->eof) break;
		long r = os_read(l->fd, l->buf, sizeof l->buf);
		if (r <= 0) { l->eof = 1; break; }
		l->len = (size_t)r;
		l->pos = 0;
	}
	line[i] = 0;
	return i > 0;
}

void os_lines_close(os_lines_t *l)
{
	if (l->fd >= 0) os_close(l->fd);
	l->fd = -1;
}

/* The library's own writes (log lines, exit reports, the page map, addr2line's pipe) into a
 * pipe whose reader has gone must not kill the program with SIGPIPE (status 141 where the
 * program's own was due): SIGPIPE is blocked while they write, and one they raised is taken
 * back (not one that was pending before). Writes are rare: four more system calls each. */
static long write_all(int fd, const void *buf, size_t n);

long os_write(int fd, const void *buf, size_t n)
{
	uint64_t pipe = 1ull << (SIGPIPE - 1), old = 0, pend = 0;
	SC(SYS_rt_sigprocmask, SIG_BLOCK, &pipe, &old, sizeof pipe, 0, 0);
	bool before = SC(SYS_rt_sigpending, &pend, sizeof pend, 0, 0, 0, 0) == 0 && (pend & pipe);
	long r = write_all(fd, buf, n);
	if (!before && SC(SYS_rt_sigpending, &pend, sizeof pend, 0, 0, 0, 0) == 0 && (pend & pipe)) {
		struct timespec now = { 0, 0 };
		SC(SYS_rt_sigtimedwait, &pipe, NULL, &now, sizeof pipe, 0, 0);
	}
	SC(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old, 0, 0);
	return r;
}

static long write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	size_t done = 0;
	while (done < n) {
		long r = SC(SYS_write, fd, p + done, n - done, 0, 0, 0);
		if (r == -EINTR) continue;
		if (r <= 0) return done ? (long)done : r;
		done += (size_t)r;
	}
	return (long)done;
}

int os_close(int fd) { return (int)SC(SYS_close, fd, 0, 0, 0, 0, 0); }

int os_dup_cloexec(int fd, int floor) { return (int)SC(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor, 0, 0, 0); }

int os_file_id(int fd, uint64_t *dev, uint64_t *ino)
{
	struct stat st = { 0 };   /* filled by the kernel; zeroed for the analyser */
	int r = (int)SC(SYS_fstat, fd, &st, 0, 0, 0, 0);
	if (r != 0) return r;
	*dev = (uint64_t)st.st_dev;
	*ino = (uint64_t)st.st_ino;
	return 0;
}

int os_getrlimit_as(uint64_t *cur)
{
	struct rlimit rl;
	int r = (int)SC(SYS_prlimit64, 0, RLIMIT_AS, 0, &rl, 0, 0);
	if (r < 0) { *cur = UINT64_MAX; return r; }
	*cur = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
	return 0;
}

uint64_t os_now_ms(void)
{
	/* clock_gettime goes through the vDSO and never allocates. */
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

long os_gettid(void) { return SC(SYS_gettid, 0, 0, 0, 0, 0, 0); }

/* Map at exactly addr without replacing anything. Old kernels (< 4.17) treat MAP_FIXED_NOREPLACE
 * as a hint: a different address back means the place was taken, so undo and report EEXIST. */
static int map_exact(uintptr_t addr, size_t len, int prot, int extra)
{
	void *p = os_mmap((void *)addr, len, prot,
	                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE | extra, -1, 0);
	if (os_failed(p)) return -os_err(p);
	if ((uintptr_t)p != addr) {
		os_munmap(p, len);
		return -EEXIST;
	}
	return 0;
}

int os_reserve_fixed(uintptr_t addr, size_t len) { return map_exact(addr, len, PROT_NONE, 0); }
int os_map_fixed_rw(uintptr_t addr, size_t len) { return map_exact(addr, len, PROT_READ | PROT_WRITE, 0); }
int os_map_over_rw(uintptr_t addr, size_t len)
{
	void *p = os_mmap((void *)addr, len, PROT_READ | PROT_WRITE,
	                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	return os_failed(p) ? -os_err(p) : 0;
}
int os_map_over_none(uintptr_t addr, size_t len)
{
	void *p = os_mmap((void *)addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	return os_failed(p) ? -os_err(p) : 0;
}
int os_commit(uintptr_t addr, size_t len) { return os_mprotect((void *)addr, len, PROT_READ | PROT_WRITE); }
int os_decommit(uintptr_t addr, size_t len)
{
	int r = os_madvise((void *)addr, len, MADV_DONTNEED);
	/* Locked pages (mlock, mlockall) refuse MADV_DONTNEED with EINVAL: they kept their data,
	 * and a calloc or a mapping that trusted them to read as zero got it. A fresh mapping
	 * over them gives them back and reads as zero all the same. */
	if (r == -EINVAL) r = os_map_over_rw(addr, len);
	return r;
}

int os_resident(uintptr_t addr, size_t len, unsigned char *vec)
{
	return (int)SC(SYS_mincore, addr, len, vec, 0, 0, 0);
}

void *os_map_meta(size_t len, uintptr_t lo, uintptr_t hi)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	void *p = os_mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (os_failed(p)) return NULL;
	if ((uintptr_t)p + len > lo && (uintptr_t)p < hi) {
		/* The kernel chose a place inside the range: move above it. */
		os_munmap(p, len);
		p = os_mmap((void *)hi, len, PROT_READ | PROT_WRITE, flags, -1, 0);
		if (os_failed(p)) return NULL;
		if ((uintptr_t)p + len > lo && (uintptr_t)p < hi) { os_munmap(p, len); return NULL; }
	}
	return p;
}

int os_open_write(const char *path)
{
	return (int)SC(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644, 0, 0);
}
