/* suites.h - one Check suite per core module. */
#ifndef CONTIG_SUITES_H
#define CONTIG_SUITES_H
#include <check.h>
Suite *config_suite(void);
Suite *classes_suite(void);
Suite *region_suite(void);
Suite *heap_suite(void);
Suite *mmap_suite(void);
Suite *leak_suite(void);
#endif
