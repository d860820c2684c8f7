/* cgroup.h - the memory limit of the process's own memory cgroup (cgroup.c). */
#ifndef CONTIG_CGROUP_H
#define CONTIG_CGROUP_H

#include "common.h"

/* The tightest memory limit of the cgroup and its ancestors in bytes, 0 when none; where gets
 * the file it came from. */
HIDDEN size_t cgroup_memory_limit(char *where, size_t wn);

#endif
