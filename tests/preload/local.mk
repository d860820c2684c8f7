# preload/local.mk - programs and programs' scripts run under LD_PRELOAD of the built library (the
# malloc family, threads, fork, C++, misuse, environment, statistics, exported symbols, dlopen
# with RTLD_DEEPBIND, and real programs: python3, sqlite3, gcc, g++). Included from
# tests/Makefile.am; paths are relative to tests/. The helper programs are not linked with the
# library; preload/lib.sh runs them under it (deepbind.sh builds its own, with gcc).

preload_tests = \
	preload/entry.sh preload/calloc.sh preload/errors.sh preload/realloc.sh preload/threads.sh \
	preload/fork.sh preload/cxx.sh preload/misuse.sh preload/env.sh preload/stats.sh \
	preload/symbols.sh preload/python.sh preload/sqlite.sh preload/gcc.sh preload/gxx.sh \
	preload/determinism.sh preload/twocopies.sh preload/deepbind.sh
TESTS += $(preload_tests)
EXTRA_DIST += $(preload_tests) preload/lib.sh preload/expected-symbols.txt \
	preload/python-objects.py preload/sqlite-workload.sql \
	preload/t-deepbind.c preload/t-deepbind-plug.c

check_PROGRAMS += preload/t-entry preload/t-calloc preload/t-errors preload/t-realloc \
	preload/t-threads preload/t-fork preload/t-cxx preload/t-misuse preload/t-basic preload/t-determ

# The compiler must not fold or drop the calls under test (malloc(SIZE_MAX), malloc+free pairs).
preload_cflags = $(WARN_CFLAGS) -pthread -fno-builtin-malloc -fno-builtin-calloc \
	-fno-builtin-realloc -fno-builtin-free -fno-builtin-aligned_alloc
preload_cppflags = -I$(top_srcdir)/lib
# The range check and failure helpers, shared with safety/ (safety/local.mk).
preload_util = preload/testutil.c preload/testutil.h

preload_t_entry_SOURCES = preload/t-entry.c $(preload_util)
preload_t_entry_CFLAGS = $(preload_cflags)
preload_t_entry_CPPFLAGS = $(preload_cppflags)
preload_t_entry_LDADD = -ldl

preload_t_calloc_SOURCES = preload/t-calloc.c $(preload_util)
preload_t_calloc_CFLAGS = $(preload_cflags)

preload_t_errors_SOURCES = preload/t-errors.c $(preload_util)
preload_t_errors_CFLAGS = $(preload_cflags)

preload_t_realloc_SOURCES = preload/t-realloc.c $(preload_util)
preload_t_realloc_CFLAGS = $(preload_cflags)

preload_t_determ_SOURCES = preload/t-determ.c
preload_t_determ_CFLAGS = $(preload_cflags)

preload_t_threads_SOURCES = preload/t-threads.c $(preload_util)
preload_t_threads_CFLAGS = $(preload_cflags)

preload_t_fork_SOURCES = preload/t-fork.c $(preload_util)
preload_t_fork_CFLAGS = $(preload_cflags)

preload_t_misuse_SOURCES = preload/t-misuse.c $(preload_util)
preload_t_misuse_CFLAGS = $(preload_cflags)
preload_t_misuse_LDADD = -ldl

preload_t_basic_SOURCES = preload/t-basic.c
preload_t_basic_CFLAGS = $(preload_cflags)

# C++: the C-only warnings dropped; libstdc++'s operator new/delete must reach the library.
preload_t_cxx_SOURCES = preload/t-cxx.cc $(preload_util)
preload_t_cxx_CFLAGS = $(preload_cflags)
# C++17 for std::align_val_t; clang needs sized deallocation asked for.
preload_t_cxx_CXXFLAGS = $(filter-out -Wmissing-prototypes -Wstrict-prototypes,$(WARN_CFLAGS)) \
	-pthread -std=gnu++17 -fsized-deallocation
