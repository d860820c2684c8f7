/* maps.h - /proc/self/maps and /proc/self/stat* readers (allocation-free). */
#ifndef CONTIG_MAPS_H
#define CONTIG_MAPS_H
#include <stddef.h>
#include <stdint.h>

typedef struct maps_entry {
	uintptr_t lo, hi;          /* [lo, hi) */
	char perms[5];             /* "rw-p" */
	int anon;                  /* no inode and no file path ([heap] and the like allowed) */
	const char *path;          /* "" when none; valid only during the callback */
	const char *line;          /* the whole line, valid only during the callback */
} maps_entry_t;

/* Return nonzero from the callback to stop. */
typedef int (*maps_fn)(const maps_entry_t *m, void *arg);
/* Calls fn for each mapping overlapping [lo, hi). Returns 1 if fn stopped it, 0, or -errno. */
int maps_scan(uintptr_t lo, uintptr_t hi, maps_fn fn, void *arg);
/* Whether the mapping holding address lo has VM_NORESERVE (/proc/self/smaps): 1, 0, or -1 unknown. */
int maps_noreserve(uintptr_t lo);
/* SwapTotal of /proc/meminfo in bytes; SIZE_MAX when it cannot be read. */
size_t maps_swap_total(void);
size_t maps_vm_size(void);
size_t maps_peak_rss(void);
size_t maps_rss(void);
/* Under the kernel's heuristic overcommit (vm.overcommit_memory 0), the largest single request it
 * grants: RAM plus swap (MemTotal + SwapTotal); SIZE_MAX in the other modes or when unreadable.
 * Read once. Asking for more fails with ENOMEM there, as it does without the library. */
size_t maps_overcommit_cap(void);
/* Whether one request of n bytes is more than that: only asked of the system above 1 GiB, so a
 * program that never wants that much reads nothing. */
static inline bool maps_beyond_memory(size_t n) { return n > ((size_t)1 << 30) && n > maps_overcommit_cap(); }
#endif
