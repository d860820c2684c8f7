/* os.h - the OS primitive layer: raw system calls that never touch errno, never allocate and
 * never go through interposed libc symbols. Each returns 0 (or a value) on success, -errno on failure. */
#ifndef CONTIG_OS_H
#define CONTIG_OS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

long os_syscall6(long nr, long a, long b, long c, long d, long e, long f);

/* mmap: returns the address, or a negative errno cast to void* (test with os_failed). */
void *os_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
static inline int os_failed(const void *p) { return (uintptr_t)p > (uintptr_t)-4096; }
static inline int os_err(const void *p) { return (int)-(intptr_t)p; }
int os_munmap(void *addr, size_t len);
int os_mprotect(void *addr, size_t len, int prot);
int os_madvise(void *addr, size_t len, int advice);
void *os_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *newaddr);
int os_open_read(const char *path);                 /* fd or -errno */
/* /proc/thread-self/NAME, else /proc/self/NAME (kernels before 3.17): fd or -errno. Once the main
 * thread has called pthread_exit, /proc/self/maps and its kin read as empty (they follow the
 * thread-group leader, whose memory is gone); the calling thread's own view still lists them. */
int os_open_proc(const char *name);
long os_read(int fd, void *buf, size_t n);
long os_write(int fd, const void *buf, size_t n);
int os_close(int fd);
/* A file read line by line through a fixed buffer, for /proc files of any length (mountinfo on a
 * container host, maps and smaps of a big process). */
typedef struct os_lines { int fd; size_t len, pos; int eof; char buf[4096]; } os_lines_t;
int os_lines_open(os_lines_t *l, const char *path);  /* 0 or -errno; path "proc:NAME" is os_open_proc(NAME) */
/* The next line into line (NUL-terminated, cut to n - 1 bytes); 0 at the end. */
int os_lines_next(os_lines_t *l, char *line, size_t n);
void os_lines_close(os_lines_t *l);
int os_dup_cloexec(int fd, int floor);             /* lowest free fd >= floor, close-on-exec; or -errno */
int os_file_id(int fd, uint64_t *dev, uint64_t *ino); /* which file fd is; 0 or -errno */
int os_open_write(const char *path);                /* O_WRONLY|O_CREAT|O_TRUNC, 0644 */
int os_getrlimit_as(uint64_t *cur);                 /* RLIMIT_AS soft limit; UINT64_MAX = none */
uint64_t os_now_ms(void);                           /* monotonic, coarse */
long os_gettid(void);
/* Reserve/commit helpers used by region.c. */
int os_reserve_fixed(uintptr_t addr, size_t len);   /* PROT_NONE at exactly addr, never replacing */
int os_map_fixed_rw(uintptr_t addr, size_t len);    /* RW at exactly addr, never replacing (lazy growth) */
int os_map_over_rw(uintptr_t addr, size_t len);    /* a fresh RW mapping over our own pages */
int os_map_over_none(uintptr_t addr, size_t len);  /* a fresh PROT_NONE one: no access, no memory */
int os_commit(uintptr_t addr, size_t len);          /* PROT_NONE -> RW over our own reservation */
int os_decommit(uintptr_t addr, size_t len);        /* give the pages back; they stay ours and read as zero
                                                      (locked ones too: a fresh mapping over them) */
int os_resident(uintptr_t addr, size_t len, unsigned char *vec); /* mincore: bit 0 of vec[i] says
                                                      OS page i of [addr, addr+len) is resident */
void *os_map_meta(size_t len, uintptr_t avoid_lo, uintptr_t avoid_hi); /* RW outside [lo,hi) */

#endif
