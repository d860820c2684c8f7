/* t-collide.c MODE - a foreign mapping placed in the range by a raw system call, behind the
 * library's back, then about 256 MiB allocated past it in blocks of many sizes. The foreign
 * pages must keep their pattern, no block may overlap them, and contig_get_stats (found with
 * dlsym, so the program also runs without the library) must list a collision over them.
 *   grow: CONTIG_MODE=lazy; mmap(MAP_FIXED_NOREPLACE) at base + 64 MiB, 1 MiB (route grow)
 *   maps: CONTIG_MODE=reserve; mmap(MAP_FIXED) over reserved pages at base + 256 MiB (route maps)
 *   none: the same with a PROT_NONE mapping (a runtime reserving its own arena; without
 *         MAP_NORESERVE it is not the library's reservation, though it looks like it in
 *         /proc/self/maps: its pages used to be handed out)
 *   free: any mode; mmap(MAP_FIXED) at base + 8 GiB, far beyond the heap, then free, realloc and
 *         malloc_usable_size of pointers into it, before the library has seen it: free ignores
 *         them, realloc fails with ENOMEM, the pages keep their pattern, and the mapping is
 *         recorded (route maps); nothing is allocated past it
 * Exit 0 when all holds, 1 with a FAIL line otherwise, 77 when the kernel lacks
 * MAP_FIXED_NOREPLACE. With "--no-detect" (CONTIG_CHECK_MAPS=0) it exits 0 only when the
 * collision went unnoticed, to show that the check is what finds it. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "contig.h"
#include "testutil.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define NBLK 4096
#define FOREIGN_LEN ((size_t)1 << 20)

int main(int argc, char **argv)
{
	static void *blk[NBLK];
	static size_t len[NBLK];
	const char *mode = argc > 1 ? argv[1] : "grow";
	int no_detect = argc > 2 && strcmp(argv[2], "--no-detect") == 0;
	int grow = strcmp(mode, "grow") == 0, freeing = strcmp(mode, "free") == 0, none = strcmp(mode, "none") == 0;
	uintptr_t fa;
	size_t total = 0, overlaps = 0;
	uint64_t rng = 7;
	int n = 0, want_route = grow ? CONTIG_ROUTE_GROW : CONTIG_ROUTE_MAPS;
	long r;

	tu_init();
	fa = tu_base + (freeing ? ((size_t)8 << 30) : grow ? (64u << 20) : (256u << 20));
	if (grow)
		r = syscall(SYS_mmap, fa, FOREIGN_LEN, PROT_READ | PROT_WRITE,
		            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	else
		r = syscall(SYS_mmap, fa, FOREIGN_LEN, none ? PROT_NONE : PROT_READ | PROT_WRITE,
		            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (r == -1) {
		perror("t-collide: raw mmap");
		return 1;
	}
	if ((uintptr_t)r != fa) {
		printf("t-collide: the kernel treats MAP_FIXED_NOREPLACE as a hint (%#lx): skipped\n", (unsigned long)r);
		return 77;
	}
	if (!none) tu_fill((void *)fa, FOREIGN_LEN, 0xf0e1);

	if (freeing) {
		void *(*volatile re)(void *, size_t) = realloc;
		void (*volatile fr)(void *) = free;
		errno = 0;
		void *q = re((void *)(fa + 64), 100);
		CHECK(q == NULL && errno == ENOMEM, "realloc of a pointer into the foreign mapping: %p, errno %d", q, errno);
		fr((void *)fa);
		fr((void *)(fa + 4096));
		fr((void *)(fa + FOREIGN_LEN - 16));
		CHECK(malloc_usable_size((void *)(fa + 32)) == 0, "malloc_usable_size of a foreign pointer is not 0");
		CHECK(tu_verify((void *)fa, FOREIGN_LEN, 0xf0e1) < 0, "the foreign mapping lost its pattern");
		q = malloc(100);
		CHECK(q != NULL, "malloc after the foreign frees failed");
		free(q);
		want_route = CONTIG_ROUTE_MAPS;
	}
	/* Keep everything live so that the heap has to grow past the foreign pages. */
	while (!freeing && total < ((size_t)256 << 20) + (grow ? 0 : ((size_t)64 << 20)) && n < NBLK) {
		uint64_t x = tu_rand(&rng);
		switch (x % 6) {
		case 0: len[n] = ((size_t)512 << 10) + x % ((size_t)2 << 20); break;
		case 1: len[n] = ((size_t)64 << 10) + x % ((size_t)64 << 10); break;
		case 2: len[n] = (size_t)200 << 10; break;
		default: len[n] = 16 + x % 30000; break;
		}
		blk[n] = malloc(len[n]);
		CHECK(blk[n] != NULL, "malloc(%zu) failed after %zu bytes", len[n], total);
		if ((uintptr_t)blk[n] < fa + FOREIGN_LEN && (uintptr_t)blk[n] + len[n] > fa) {
			if (!no_detect)
				tu_fail(__FILE__, __LINE__, "block %p+%zu overlaps the foreign mapping %#lx-%#lx",
				        blk[n], len[n], (unsigned long)fa, (unsigned long)(fa + FOREIGN_LEN));
			overlaps++;
		} else
			tu_fill(blk[n], len[n], (uint64_t)n);
		CHECK_RANGE(blk[n], len[n], "block");
		total += len[n++];
	}
	CHECK(freeing || (uintptr_t)blk[n - 1] > fa || no_detect, "the heap did not grow past the foreign mapping (last block %p)", blk[n - 1]);
	if (!no_detect) {
		CHECK(none || tu_verify((void *)fa, FOREIGN_LEN, 0xf0e1) < 0, "the foreign mapping lost its pattern");
		for (int i = 0; i < n; i++)
			CHECK(tu_verify(blk[i], len[i], (uint64_t)i) < 0, "block %d lost its contents", i);
	}

	contig_stats_t st;
	TU_STATS(&st);
	int found = 0;
	for (size_t i = 0; i < st.collisions && i < CONTIG_STATS_COLLISIONS; i++) {
		const contig_collision_t *c = &st.collision[i];
		printf("t-collide: collision %#lx+%zu route %d\n", (unsigned long)c->addr, c->len, (int)c->route);
		if ((int)c->route == want_route && c->addr < fa + FOREIGN_LEN && c->addr + c->len > fa)
			found = 1;
	}
	if (no_detect) {
		CHECK(!found, "CONTIG_CHECK_MAPS=0 but the collision was still found");
		printf("t-collide: %s: undetected, as expected with the check off (%zu overlapping blocks)\n", mode, overlaps);
		return 0;
	}
	CHECK(found, "no collision with route %s over %#lx-%#lx in the statistics (%zu collisions)",
	      mode, (unsigned long)fa, (unsigned long)(fa + FOREIGN_LEN), st.collisions);
	if (freeing) {
		printf("t-collide: free: pointers into the foreign mapping %#lx-%#lx ignored, realloc ENOMEM\n",
		       (unsigned long)fa, (unsigned long)(fa + FOREIGN_LEN));
		return 0;
	}
	printf("t-collide: %s: %d blocks, %zu MiB, last at %p, foreign %#lx-%#lx intact\n", mode, n,
	       total >> 20, blk[n - 1], (unsigned long)fa, (unsigned long)(fa + FOREIGN_LEN));
	return 0;
}
