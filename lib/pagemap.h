/* pagemap.h - the page map written out at exit under CONTIG_MAP_FILE (pagemap.c), one text line
 * per run; the beacon that makes it readable from a running process is beacon.h's. Nothing here
 * runs on malloc or free. */
#ifndef CONTIG_PAGEMAP_H
#define CONTIG_PAGEMAP_H
#include "common.h"

HIDDEN void pagemap_exit(void);               /* at exit: the dump to CONTIG_MAP_FILE, if set */
HIDDEN int pagemap_write(int fd);             /* the dump to fd; 0, or -1 when a write failed */

#endif
