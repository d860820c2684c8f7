# lint/local.mk - static checkers over lib/ and preload/; included from tests/Makefile.am.
#   make lint   cppcheck and clang-tidy with the checks and suppressions of tests/lint/
#               (README says which and why), and pyflakes over the launcher (python.sh, skipped
#               when not installed); non-zero exit on any finding, for CI
# tests/lint/sanitizers.sh (called by CI, not by make) builds an ASan/UBSan tree and runs the
# unit runner.
# lint/layers.sh runs in make check: the core's includes follow the layer table of docs/design.md.
TESTS += lint/layers.sh
EXTRA_DIST += lint/layers.sh lint/README lint/lint.sh lint/sanitizers.sh lint/tidy-checks lint/tidy.supp lint/cppcheck.supp lint/python.sh
.PHONY: lint
lint:
	$(SHELL) $(srcdir)/lint/lint.sh $(top_srcdir) $(top_builddir)
	$(SHELL) $(srcdir)/lint/python.sh $(top_srcdir) || test $$? = 77
