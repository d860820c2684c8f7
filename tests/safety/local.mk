# Address-space safety and memory control (issues 3 and 4): programs run under LD_PRELOAD of the
# built library by the scripts below, and the API example of docs/ linked with the library.
# Included from tests/Makefile.am; paths are relative to tests/.

safety_cppflags = -I$(top_srcdir)/lib -I$(srcdir)/preload -D_GNU_SOURCE
safety_cflags = $(WARN_CFLAGS) -pthread
safety_ldadd = -ldl -lpthread

check_PROGRAMS += safety/t-range safety/t-nopie safety/t-collide safety/t-mmap safety/t-mix \
	safety/t-fallback safety/t-limit safety/t-limit-cxx safety/t-purge safety/t-stats \
	safety/t-leak safety/t-example safety/t-purger safety/t-huge

safety_t_range_SOURCES = safety/t-range.c preload/testutil.c preload/testutil.h
safety_t_range_CPPFLAGS = $(safety_cppflags)
safety_t_range_CFLAGS = $(safety_cflags)
safety_t_range_LDADD = $(safety_ldadd)

# Not position-independent: its image sits at 0x400000, where collide-start.sh puts the range.
safety_t_nopie_SOURCES = safety/t-nopie.c preload/testutil.c preload/testutil.h
safety_t_nopie_CPPFLAGS = $(safety_cppflags)
safety_t_nopie_CFLAGS = $(safety_cflags) -fno-pie
safety_t_nopie_LDFLAGS = -no-pie
safety_t_nopie_LDADD = $(safety_ldadd)

safety_t_collide_SOURCES = safety/t-collide.c preload/testutil.c preload/testutil.h
safety_t_collide_CPPFLAGS = $(safety_cppflags)
safety_t_collide_CFLAGS = $(safety_cflags)
safety_t_collide_LDADD = $(safety_ldadd)

safety_t_mmap_SOURCES = safety/t-mmap.c preload/testutil.c preload/testutil.h
safety_t_mmap_CPPFLAGS = $(safety_cppflags)
safety_t_mmap_CFLAGS = $(safety_cflags)
safety_t_mmap_LDADD = $(safety_ldadd)

safety_t_mix_SOURCES = safety/t-mix.c preload/testutil.c preload/testutil.h
safety_t_mix_CPPFLAGS = $(safety_cppflags)
safety_t_mix_CFLAGS = $(safety_cflags)
safety_t_mix_LDADD = $(safety_ldadd)

safety_t_fallback_SOURCES = safety/t-fallback.c preload/testutil.c preload/testutil.h
safety_t_fallback_CPPFLAGS = $(safety_cppflags)
safety_t_fallback_CFLAGS = $(safety_cflags)
safety_t_fallback_LDADD = $(safety_ldadd)

safety_t_limit_SOURCES = safety/t-limit.c preload/testutil.c preload/testutil.h
safety_t_limit_CPPFLAGS = $(safety_cppflags)
safety_t_limit_CFLAGS = $(safety_cflags)
safety_t_limit_LDADD = $(safety_ldadd)

safety_t_limit_cxx_SOURCES = safety/t-limit-cxx.cc
safety_t_limit_cxx_CXXFLAGS = -Wall -Wextra

safety_t_purge_SOURCES = safety/t-purge.c preload/testutil.c preload/testutil.h
safety_t_purge_CPPFLAGS = $(safety_cppflags)
safety_t_purge_CFLAGS = $(safety_cflags)
safety_t_purge_LDADD = $(safety_ldadd)

# mallinfo() is deprecated in glibc; the test checks that the old entry point still agrees.
safety_t_huge_SOURCES = safety/t-huge.c preload/testutil.c preload/testutil.h
safety_t_huge_CPPFLAGS = $(safety_cppflags)
safety_t_huge_CFLAGS = $(safety_cflags)
safety_t_huge_LDADD = $(safety_ldadd)

safety_t_purger_SOURCES = safety/t-purger.c preload/testutil.c preload/testutil.h
safety_t_purger_CPPFLAGS = $(safety_cppflags)
safety_t_purger_CFLAGS = $(safety_cflags)
safety_t_purger_LDADD = $(safety_ldadd)

safety_t_stats_SOURCES = safety/t-stats.c preload/testutil.c preload/testutil.h
safety_t_stats_CPPFLAGS = $(safety_cppflags)
safety_t_stats_CFLAGS = $(safety_cflags) -Wno-deprecated-declarations
safety_t_stats_LDADD = $(safety_ldadd)

safety_t_leak_SOURCES = safety/t-leak.c
safety_t_leak_LDADD = -ldl -lpthread
safety_t_leak_CFLAGS = $(WARN_CFLAGS) -pthread -fno-builtin-malloc -fno-builtin-free -fno-omit-frame-pointer

# docs/example.c (through t-example.c, which includes it) linked with -lcontig, not preloaded.
safety_t_example_SOURCES = safety/t-example.c
safety_t_example_CPPFLAGS = -I$(top_srcdir)/lib
safety_t_example_CFLAGS = $(WARN_CFLAGS)
safety_t_example_LDADD = $(top_builddir)/preload/libcontig.la
EXTRA_safety_t_example_DEPENDENCIES = $(top_srcdir)/docs/example.c

TESTS += safety/ulimit.sh safety/collide-start.sh safety/collide-grow.sh safety/collide-maps.sh \
	safety/mmap-calls.sh safety/mmap-semantics.sh safety/mix-threads.sh safety/fallback.sh \
	safety/limit.sh safety/cgroup.sh safety/cgroup-parse.sh safety/purge.sh safety/stats-json.sh safety/leaks.sh \
	safety/purger.sh safety/huge.sh safety/t-example

EXTRA_DIST += safety/common.sh safety/ulimit.sh safety/collide-start.sh safety/collide-grow.sh \
	safety/collide-maps.sh safety/mmap-calls.sh safety/mmap-semantics.sh safety/mix-threads.sh \
	safety/fallback.sh safety/limit.sh safety/cgroup.sh safety/cgroup-parse.sh safety/purge.sh safety/stats-json.sh \
	safety/leaks.sh safety/purger.sh safety/huge.sh $(top_srcdir)/docs/example.c
