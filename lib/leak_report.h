/* leak_report.h - the leak check's groups and report (leak_report.c): the scan (leak.c) adds each
 * leaked block to the group of its allocation stack, then asks for the report. One check at a
 * time: the caller holds the check's lock. */
#ifndef CONTIG_LEAK_REPORT_H
#define CONTIG_LEAK_REPORT_H

#include <stddef.h>
#include <stdint.h>

/* Empty the groups before a check (their table is made on the first call); -1 without memory. */
__attribute__((visibility("hidden"))) int leak_groups_reset(void);
/* Count one leaked block of bytes asked, allocated from stack id (0: no stack), in its group;
 * indirect: another leaked block points to it. */
__attribute__((visibility("hidden"))) void leak_group_add(uint32_t stack, int indirect, size_t bytes);
/* Match the suppressions against each group, print the rest to the exit report's fd (nothing when
 * there is nothing), and store the unsuppressed leaked bytes and allocations. */
__attribute__((visibility("hidden"))) void leak_report(size_t *bytes, size_t *blocks);

/* Match one suppression pattern ('*' wildcards; a substring match unless anchored with a leading
 * '^' or a trailing '$') against s: what the report matches each frame's function, module and
 * file with (the unit tests drive it directly). */
__attribute__((visibility("hidden"))) int leak_pattern_match(const char *pat, const char *s);

#endif
