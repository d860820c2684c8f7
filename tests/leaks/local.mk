# leaks/local.mk - the seeded leak corpus (programs whose true leaks are written in their header
# comments) and its runner, which compiles each one itself with the flags it asks for (-O0 with
# frame pointers, -O2 without) and checks the CONTIG_LEAKS=error report exactly; realprog.sh:
# real programs stay clean with the same stdout; stderr.sh: the exit reports survive a program
# that closes stderr and never write into a file that took fd 2. compare.sh (not in make check) puts the library
# beside LeakSanitizer and valgrind for docs/leaks.md.
# Included from tests/Makefile.am; paths are relative to tests/.
leaks_corpus = \
	leaks/churn.c leaks/classes.c leaks/cycle.c leaks/deadthread.c leaks/deep.c leaks/direct-o2.c leaks/direct.c leaks/endedthread.c \
	leaks/global.c leaks/heapheld.c leaks/inlined.c leaks/inmain.c leaks/inmain-large.c leaks/interior.c leaks/large.c leaks/list.c leaks/mainexit.c leaks/many.c \
	leaks/mmapheld.c leaks/nodebug.c leaks/realloc.c leaks/sharedfile.c leaks/sigbusy.c leaks/sigflicker.c leaks/sigidle.c leaks/stale.c leaks/stripped.c leaks/threadstack.c leaks/tls.c leaks/usable.c leaks/xor.c \
	leaks/cxxclean.cc leaks/exceptions.cc leaks/holder.cc leaks/longname.cc leaks/newarr.cc
TESTS += leaks/corpus.sh leaks/realprog.sh leaks/stderr.sh
EXTRA_DIST += leaks/corpus.h leaks/corpus.sh leaks/realprog.sh leaks/stderr.sh leaks/stderr.c leaks/compare.sh leaks/bigheap.c leaks/capture-bench.c leaks/ctorleak-lib.c leaks/ctorleak-main.c $(leaks_corpus)
# The runner builds the corpus with the configured compilers.
AM_TESTS_ENVIRONMENT += CC='$(CC)'; export CC; CXX='$(CXX)'; export CXX;
