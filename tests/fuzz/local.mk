# fuzz/local.mk - the fuzz harness of the core (fuzz-core.c: random operation sequences checked
# against a shadow model). Included from tests/Makefile.am; paths are relative to tests/.
#   make check   fuzz/fuzz.sh: replays fuzz/regress/ and runs the plain driver (the configured
#                compiler, linked with the core) for about 20 s
#   make fuzz [FUZZ_SECONDS=600]   builds the libFuzzer target with clang (ASan+UBSan, the core's
#                sources compiled in) and runs it; new inputs go to fuzz/corpus/, crashes to
#                fuzz/crashes/ (in the build tree); move a crash into $(srcdir)/fuzz/regress/
#                once it is understood, and it is replayed by make check from then on.
check_PROGRAMS += fuzz/fuzz-core
fuzz_fuzz_core_SOURCES = fuzz/fuzz-core.c
fuzz_fuzz_core_CPPFLAGS = -I$(top_builddir) -I$(top_srcdir)/lib -D_GNU_SOURCE
fuzz_fuzz_core_CFLAGS = $(WARN_CFLAGS) $(SAN_CFLAGS) -pthread
fuzz_fuzz_core_LDADD = $(top_builddir)/lib/libcontig-core.la -lpthread
fuzz_fuzz_core_LDFLAGS = $(SAN_CFLAGS)
TESTS += fuzz/fuzz.sh
EXTRA_DIST += fuzz/fuzz.sh fuzz/build.sh fuzz/README fuzz/regress

FUZZ_SECONDS = 600
# Known library bugs the random runs step around (fuzz-core.c lists them); empty it once fixed.
FUZZ_AVOID =
CLANG = clang
.PHONY: fuzz
fuzz:
	CLANG='$(CLANG)' $(SHELL) $(srcdir)/fuzz/build.sh libfuzzer $(top_srcdir) $(top_builddir) fuzz/fuzz-core-libfuzzer
	@mkdir -p fuzz/corpus fuzz/crashes
	FUZZ_AVOID='$(FUZZ_AVOID)' fuzz/fuzz-core-libfuzzer -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
		-print_final_stats=1 -artifact_prefix=fuzz/crashes/ fuzz/corpus

