/* testutil.h - the range check and failure helpers shared by the LD_PRELOAD test programs.
 * The programs are not linked with libcontig: they learn the range from the environment. */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TU_DEFAULT_BASE 0xf800000000ULL
#define TU_DEFAULT_SIZE (64ULL << 30)

extern uintptr_t tu_base;       /* first address of the expected range */
extern uintptr_t tu_size;       /* bytes in the expected range */

/* Parse "0x…", decimal, with an optional K/M/G/T suffix (powers of 1024); 0 on success. */
int tu_parse_size(const char *s, uint64_t *out);
/* Read CONTIG_BASE/CONTIG_SIZE (defaults 0xf800000000, 64G); exits 1 on a value it cannot parse. */
void tu_init(void);
/* Nonzero when [addr, addr+len) lies inside the range (len 0: addr itself). An integer, not a
 * pointer: GCC would otherwise warn that fresh (uninitialised) blocks are read. */
int tu_in_range(uintptr_t addr, size_t len);
/* Print "FAIL: file:line: message" on stderr and exit 1. */
void tu_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 3, 4)));
/* Fill and verify a byte pattern derived from seed over len bytes; verify returns the first bad offset or -1. */
void tu_fill(void *p, size_t len, uint64_t seed);
long tu_verify(const void *p, size_t len, uint64_t seed);
/* Fills the contig_stats_t at st (size bytes) through the preloaded library's contig_get_stats,
 * found with dlsym so that the program also runs without the library; the test fails when the
 * library is not there or refuses. Use TU_STATS(&st). */
void tu_stats_fill(void *st, size_t size);
#define TU_STATS(st) tu_stats_fill((st), sizeof *(st))
/* xorshift64* random numbers. */
uint64_t tu_rand(uint64_t *state);

#define CHECK(cond, ...) do { if (!(cond)) tu_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define CHECK_RANGE(p, len, what) \
	CHECK(tu_in_range((uintptr_t)(p), (len)), "%s: %p (+%zu) is outside the range [%#lx, %#lx)", \
	      (what), (const void *)(p), (size_t)(len), (unsigned long)tu_base, \
	      (unsigned long)(tu_base + tu_size))

#ifdef __cplusplus
}
#endif
#endif /* TESTUTIL_H */
