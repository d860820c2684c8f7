# tests/external/local.mk - included from tests/Makefile.am. Not part of make check:
# `make check-external` runs other people's test suites (CPython's, GLib's) without and with the
# library and compares the outcomes (tests/external/README.md). `make check-external LEAKS=1`
# adds the leak-mode pass (CONTIG_LEAKS=report, leaks.supp; LEAKS.md has the findings).
EXTRA_DIST += external/run.sh external/python-tests.txt external/glib-skip.txt external/README.md \
	external/leakfd.c external/leaksum.py external/leaks.supp external/LEAKS.md

check-external: all
	LIBCONTIG='$(abs_top_builddir)/preload/.libs/libcontig.so' CC='$(CC)' \
		EXTERNAL_LEAKS="$${EXTERNAL_LEAKS:-$(LEAKS)}" $(SHELL) '$(srcdir)/external/run.sh'
.PHONY: check-external
