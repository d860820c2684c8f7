# tools/local.mk - tests of the contig launcher (scripts/contig.py, run in place with CONTIG_LIB),
# of scripts/bench --combine, and of the man pages; included from tests/Makefile.am.
tools_tests = tools/usage.sh tools/run.sh tools/info.sh tools/map.sh tools/man.sh tools/test_contig.sh \
	tools/bench_combine.sh
TESTS += $(tools_tests)
EXTRA_DIST += $(tools_tests) tools/common.sh tools/test_contig.py
# known blocks for the page map tests (test_contig.py)
check_PROGRAMS += tools/t-pagemap
tools_t_pagemap_SOURCES = tools/t-pagemap.c
tools_t_pagemap_CFLAGS = $(preload_cflags)
