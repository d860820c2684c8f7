#!/bin/sh
# sanitizers.sh - configures the tree with --enable-sanitizers (ASan + UBSan on the core and its
# unit tests) in a temporary directory, builds it, and runs the unit runner there; for CI.
#   sanitizers.sh [SRCDIR]    SRCDIR: top of the source tree (default: this script's ../..)
# KEEP=1 keeps the build directory. Exit: the runner's status (0 all pass), 77 when Check is not
# installed (no runner), 99 when configure or make fails.
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${1:-$here/../..}" && pwd)
[ -x "$src/configure" ] || { echo "sanitizers: $src/configure missing (run autogen.sh)"; exit 99; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/contig-san.XXXXXX") || exit 99
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 99
echo "sanitizers: building in $dir"
"$src/configure" -q --enable-sanitizers ${CONFIGURE_FLAGS:-} >configure.log 2>&1 || { cat configure.log; exit 99; }
jobs=$(nproc 2>/dev/null || echo 2)
make -j"$jobs" >make.log 2>&1 || { tail -40 make.log; exit 99; }
make -j"$jobs" -C tests unit/runner >>make.log 2>&1 || { tail -40 make.log; exit 99; }
[ -x tests/unit/runner ] || { echo "sanitizers: no unit runner (Check not installed?)"; exit 77; }
# halt_on_error: a UBSan report fails the run instead of scrolling by. detect_leaks=0: LeakSanitizer
# does not scan the range (raw mmap, unknown to it), so glibc blocks referenced only from heap
# blocks would be reported as leaks. The runner moves the
# range out of ASan's shadow gap itself (CONTIG_BASE=0x300000000000, re-exec).
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=0} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
	tests/unit/runner
rc=$?
echo "sanitizers: unit runner exit $rc"
exit $rc
