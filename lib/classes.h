/* classes.h - the small size classes: four per doubling above 128 bytes, one more at 9/8 of each
 * power of two from 1 KiB to 8 KiB, 16-byte steps below 128 bytes (tables in classes.c). A leaf:
 * tables and one inline lookup, no state. */
#ifndef CONTIG_CLASSES_H
#define CONTIG_CLASSES_H

#include "common.h"

#define NCLASS       53                       /* classes 1..52: 16 B .. 128 KiB; 0 is unused */
#define CLASS_16K    40                       /* 16 KiB blocks: the last one-page class */
#define SMALL_MAX    ((size_t)128 << 10)      /* larger blocks are page runs */
#define ONEPAGE_MAX  ((size_t)16 << 10)       /* classes up to this live in one-page runs */

extern HIDDEN const uint32_t class_size[NCLASS];   /* bytes per block */
extern HIDDEN const uint8_t class_pages[NCLASS];   /* pages per run */
extern HIDDEN const uint16_t class_blocks[NCLASS]; /* blocks per run */
extern HIDDEN const uint8_t class_lut[1025];       /* size_class() up to 16 KiB, by (n + 15) / 16 */

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
