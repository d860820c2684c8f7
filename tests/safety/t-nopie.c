/* t-nopie.c - built without PIE, so its text and data sit at 0x400000; run with
 * CONTIG_BASE=0x400000 its own image lies inside the range (collision at start). It allocates
 * blocks of many sizes and checks that none overlaps a mapping of its executable (read from
 * /proc/self/maps) nor any mapping that is not the library's, that its initialised data and bss
 * keep their contents, and that the blocks are in the range. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"

#define NBLK 2000

static char data_pattern[8192] = "t-nopie initialised data";   /* .data */
static unsigned char bss_pattern[1 << 16];                       /* .bss */

typedef struct { uintptr_t lo, hi; } span_t;
static span_t image[64];
static int nimage;

/* The executable's own mappings, from /proc/self/maps. */
static void read_image(void)
{
	char exe[4096], line[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(n > 0 && f != NULL, "cannot read /proc/self/exe or /proc/self/maps: %s", strerror(errno));
	exe[n] = 0;
	while (fgets(line, sizeof line, f) && nimage < 64) {
		unsigned long lo, hi;
		char *path = strchr(line, '/');
		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		if (path && strncmp(path, exe, (size_t)n) == 0 && path[n] == '\n') {
			image[nimage].lo = lo;
			image[nimage++].hi = hi;
		}
	}
	fclose(f);
	CHECK(nimage > 0, "no mapping of %s in /proc/self/maps", exe);
}

static void check_block(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;
	for (int i = 0; i < nimage; i++)
		CHECK(a + len <= image[i].lo || a >= image[i].hi,
		      "block %p+%zu overlaps the program's own mapping %#lx-%#lx", p, len,
		      (unsigned long)image[i].lo, (unsigned long)image[i].hi);
	CHECK_RANGE(p, len, "block");
}

int main(int argc, char **argv)
{
	static void *blk[NBLK];
	static size_t len[NBLK];
	uint64_t rng = 42;
	size_t total = 0;
	int i;

	tu_init();
	for (i = 0; i < (int)sizeof bss_pattern; i++)
		bss_pattern[i] = (unsigned char)(i * 7);
	tu_fill(data_pattern + 64, sizeof data_pattern - 64, 99);
	read_image();
	if (argc > 1 && strcmp(argv[1], "--where") == 0) {    /* where the image is, no checks */
		printf("%#lx\n", (unsigned long)image[0].lo);
		return 0;
	}
	CHECK(image[0].lo >= tu_base && image[0].lo < tu_base + tu_size,
	      "the program is not mapped inside the range (%#lx): is it built with -no-pie?",
	      (unsigned long)image[0].lo);
	for (i = 0; i < NBLK; i++) {
		uint64_t r = tu_rand(&rng);
		len[i] = (r & 15) == 0 ? 100000 + r % 300000 : 16 + r % 4000;
		blk[i] = malloc(len[i]);
		CHECK(blk[i] != NULL, "malloc(%zu) failed after %zu bytes", len[i], total);
		check_block(blk[i], len[i]);
		tu_fill(blk[i], len[i], (uint64_t)i);
		total += len[i];
	}
	for (i = 0; i < NBLK; i++) {
		CHECK(tu_verify(blk[i], len[i], (uint64_t)i) < 0, "block %d lost its contents", i);
		if (i & 1)
			free(blk[i]);
	}
	for (i = 0; i < (int)sizeof bss_pattern; i++)
		CHECK(bss_pattern[i] == (unsigned char)(i * 7), "the program's bss was overwritten at %d", i);
	CHECK(strcmp(data_pattern, "t-nopie initialised data") == 0 &&
	      tu_verify(data_pattern + 64, sizeof data_pattern - 64, 99) < 0, "the program's data was overwritten");
	for (i = 0; i < nimage; i++)
		printf("t-nopie: segment %#lx-%#lx\n", (unsigned long)image[i].lo, (unsigned long)image[i].hi);
	printf("t-nopie: image at %#lx-%#lx, %d blocks (%zu KiB) in the range, none over it\n",
	       (unsigned long)image[0].lo, (unsigned long)image[nimage - 1].hi, NBLK, total >> 10);
	return 0;
}
