/* beacon.h - the page map made findable from outside the library (beacon.c): a read-only page
 * that a debugger or `contig map PID` finds through /proc/PID/maps and reads through
 * /proc/PID/mem. Filled once at initialisation; nothing here runs on malloc or free.
 *
 * Layout contract (docs/heap-map.md): the beacon is the first bytes of a 4 KiB anonymous mapping
 * of its own, made read-only (r--p) once filled, so that the kernel does not merge it with the
 * library's read-write metadata. A reader checks magic and version, then decodes the descriptor
 * array with the sizes and field offsets the beacon gives, and the page kinds and flag bits of
 * lib/common.h (enum page_kind, PF_*). Any change to page_t's meaning, the kinds or the flags
 * bumps PAGEMAP_VERSION. */
#ifndef CONTIG_BEACON_H
#define CONTIG_BEACON_H
#include "common.h"

#define PAGEMAP_MAGIC   "libcontig-pgmap"     /* 15 characters and a NUL: magic[16] */
#define PAGEMAP_VERSION 2u

typedef struct pagemap_beacon {
	char magic[16];                 /* PAGEMAP_MAGIC */
	uint32_t version;               /* PAGEMAP_VERSION */
	uint32_t header_size;           /* bytes of this struct */
	uint32_t desc_size;             /* bytes per page descriptor: sizeof(page_t), 64 */
	uint32_t page_shift;            /* log2 of the page size: 16 */
	uint64_t base;                  /* first address of the range */
	uint64_t size;                  /* bytes in the range */
	uint64_t pages;                 /* address of the descriptor array, npages entries */
	uint64_t npages;
	uint64_t frontier;              /* address of a size_t: pages [0, *frontier) were made usable */
	uint64_t class_size;            /* address of uint32_t[nclass]: bytes per block of each class */
	uint64_t class_pages;           /* address of uint8_t[nclass]: pages per run of each class */
	uint32_t nclass;
	uint32_t pid;                   /* the process that filled it (a forked child inherits it) */
	/* byte offsets of the fields a reader decodes, inside one descriptor */
	uint16_t off_kind, off_shift, off_cls, off_flags, off_capacity;   /* off_shift: a byte that is always 0
	                                                                   (once the live bitmap's granule) */
	uint16_t off_hot, off_block_size;           /* PK_SMALL heads: address of the run's page_hot_t
	                                               (uint64_t), bytes per block (uint32_t) */
	uint16_t off_npages, off_head_off;          /* other kinds (uint32_t each) */
	uint16_t off_asked, off_usable;             /* PK_LARGE (uint64_t); PK_MMAP: map_lo, map_hi */
	uint16_t hot_used;                          /* offset of the run's live count (uint32_t) in
	                                               its page_hot_t, outside the descriptor */
	uint16_t unused[4];
} pagemap_beacon_t;

HIDDEN void beacon_publish(void);             /* after region_init(): map and fill the beacon */

#endif
