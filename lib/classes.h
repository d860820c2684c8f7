/* classes.h - the small size classes: four per doubling above 128 bytes, one more at 9/8 of each
 * power of two from 1 KiB to 8 KiB, 16-byte steps below 128 bytes (tables in classes.c). A leaf:
 * tables and one inline lookup, no state. */
#ifndef CONTIG_CLASSES_H
#define CONTIG_CLASSES_H

#include "common.h"

#define NCLASS_MALLOC 53                      /* classes 1..52: 16 B .. 128 KiB; 0 is unused */
#define NCLASS       66                       /* and 53..65: the aligned twins of 13 of them */
#define CLASS_16K    40                       /* 16 KiB blocks: the last one-page class */
#define SMALL_MAX    ((size_t)128 << 10)      /* larger blocks are page runs */
#define ONEPAGE_MAX  ((size_t)16 << 10)       /* classes up to this live in one-page runs */

extern HIDDEN const uint32_t class_size[NCLASS];   /* bytes per block */
extern HIDDEN const uint8_t class_pages[NCLASS];   /* pages per run */
extern HIDDEN const uint16_t class_blocks[NCLASS]; /* blocks per run */
extern HIDDEN const uint8_t class_lut[1025];       /* size_class() up to 16 KiB, by (n + 15) / 16 */
extern HIDDEN const uint8_t class_twin[NCLASS_MALLOC]; /* a class's aligned twin, or 0 */

/* Runs of the classes from 128 bytes to 2 KiB start their first block at a colour, a multiple of
 * 64 bytes below the block size that varies from run to run (heap.c, run_colour): blocks of the
 * same index in different runs then fall in different cache sets, which they would not where
 * huge pages keep the low 21 bits of an address physical. A colour costs a run at most one block
 * (1 in 32 at 2 KiB; larger classes, with 4-28 blocks a run, are not coloured). A block of a
 * coloured run is aligned to 64 bytes at most, so requests aligned to more (memalign and its
 * kind) take their class's aligned twin instead: the same size, pages and blocks, runs never
 * coloured, never named by size_class(). The coloured classes whose size is a multiple of 128
 * have twins. */
static inline bool class_coloured(unsigned cls)
{
	return cls < NCLASS_MALLOC && class_size[cls] >= 128 && class_size[cls] <= 2048;
}

static inline unsigned size_class(size_t n)
{
	if (likely(n <= ONEPAGE_MAX))
		return class_lut[(n + 15) >> 4];
	/* above 16 KiB, four classes per doubling: 2^k < n <= 2^(k+1) is in the quarter
	 * (n - 1) >> (k - 2), 4..7, of its doubling */
	unsigned k = 63u - (unsigned)__builtin_clzl(n - 1);
	return CLASS_16K + (k - 14u) * 4u + (unsigned)((n - 1) >> (k - 2)) - 3u;
}

#endif
