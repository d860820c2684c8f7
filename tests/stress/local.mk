# stress/local.mk - long stress runs of the built library under LD_PRELOAD (threads that exit
# while their blocks are freed elsewhere, fork storms, CONTIG_LIMIT, lazy growth with foreign
# mappings appearing). Included from tests/Makefile.am; paths are relative to tests/.
#   make stress [STRESS_SECONDS=60]   the full run (not part of make check)
#   make check                        runs stress/quick.sh: every phase, about 10 s
check_PROGRAMS += stress/stress
stress_stress_SOURCES = stress/stress.c
stress_stress_CPPFLAGS = -I$(top_srcdir)/lib -D_GNU_SOURCE
stress_stress_CFLAGS = $(WARN_CFLAGS) -pthread
stress_stress_LDADD = -ldl -lpthread
TESTS += stress/quick.sh
EXTRA_DIST += stress/quick.sh stress/stress.sh

STRESS_SECONDS = 60
.PHONY: stress
stress: stress/stress$(EXEEXT)
	@cd $(top_builddir)/preload && $(MAKE) $(AM_MAKEFLAGS) all
	$(AM_TESTS_ENVIRONMENT) STRESS_SECONDS='$(STRESS_SECONDS)'; export STRESS_SECONDS; \
	$(SHELL) $(srcdir)/stress/stress.sh $(STRESS_SECONDS)
