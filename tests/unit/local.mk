# Check unit tests of the core (lib/), included from tests/Makefile.am. They link the core
# directly, so the test runner's own malloc is never replaced under it.
if HAVE_CHECK
check_PROGRAMS += unit/runner
TESTS += unit/runner
unit_runner_SOURCES = unit/runner.c unit/suites.h unit/test-config.c unit/test-classes.c \
	unit/test-region.c unit/test-heap.c unit/test-mmap.c unit/test-leak.c
unit_runner_CFLAGS = $(WARN_CFLAGS) $(SAN_CFLAGS) $(CHECK_CFLAGS) -D_GNU_SOURCE -pthread
unit_runner_CPPFLAGS = -I$(top_builddir) -I$(top_srcdir)/lib
unit_runner_LDADD = $(top_builddir)/lib/libcontig-core.la $(CHECK_LIBS) -lpthread -lgcc_s
unit_runner_LDFLAGS = $(SAN_CFLAGS)
endif
