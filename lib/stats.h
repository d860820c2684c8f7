/* stats.h - statistics from the page descriptors and the heaps, and the reports at exit (stats.c). */
#ifndef CONTIG_STATS_H
#define CONTIG_STATS_H

#include "common.h"

HIDDEN void stats_collect(contig_stats_t *st);
HIDDEN void stats_report_exit(void);
HIDDEN void stats_print_malloc_stats(void);

#endif
