#!/bin/sh
# build.sh - builds the fuzz harness with the core's sources compiled in (no libtool, no lib/
# build needed beyond configure's config.h).
#   build.sh libfuzzer SRCDIR BUILDDIR OUT   clang -fsanitize=fuzzer,address,undefined
#   build.sh plain     SRCDIR BUILDDIR OUT   $CC (default cc), the random/replay driver
# SRCDIR is the top of the source tree, BUILDDIR the top of the build tree (holds config.h).
# Exit 77 when the compiler needed is missing.
set -e
mode=$1 src=$2 bld=$3 out=$4
[ -n "$out" ] || { echo "usage: $0 libfuzzer|plain SRCDIR BUILDDIR OUT" >&2; exit 2; }
[ -f "$bld/config.h" ] || { echo "$0: $bld/config.h missing (run configure)" >&2; exit 2; }
srcs=$(ls "$src"/lib/*.c)     # the whole core, as lib/Makefile.am builds it
common="-g -D_GNU_SOURCE -I$bld -I$src/lib -pthread -ftls-model=initial-exec"
case $mode in
libfuzzer)
	CLANG=${CLANG:-clang}
	command -v "$CLANG" >/dev/null 2>&1 || { echo "$0: $CLANG not found" >&2; exit 77; }
	# -fno-sanitize-recover: a UBSan finding is a crash, so libFuzzer saves the input.
	exec "$CLANG" -O1 $common -DFUZZ_LIBFUZZER -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -fno-omit-frame-pointer $srcs "$src/tests/fuzz/fuzz-core.c" -o "$out" ;;
plain)
	CC=${CC:-cc}
	exec $CC -O2 $common ${FUZZ_CFLAGS:-} $srcs "$src/tests/fuzz/fuzz-core.c" -o "$out" ;;
*)
	echo "$0: unknown mode $mode" >&2; exit 2 ;;
esac
