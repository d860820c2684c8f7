# tests/external/local.mk - included from tests/Makefile.am. Not part of make check:
# `make check-external` runs other people's test suites (CPython's, GLib's) without and with the
# library and compares the outcomes (tests/external/README.md).
EXTRA_DIST += external/run.sh external/python-tests.txt external/glib-skip.txt external/README.md

check-external: all
	LIBCONTIG='$(abs_top_builddir)/preload/.libs/libcontig.so' $(SHELL) '$(srcdir)/external/run.sh'
.PHONY: check-external
