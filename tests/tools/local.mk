# tools/local.mk - tests of the contig launcher (scripts/contig.in, run in place with CONTIG_LIB)
# and of the man pages; included from tests/Makefile.am.
tools_tests = tools/usage.sh tools/run.sh tools/info.sh tools/map.sh tools/man.sh
TESTS += $(tools_tests)
EXTRA_DIST += $(tools_tests) tools/common.sh
