#!/bin/sh
# stderr.sh - the exit reports (CONTIG_LEAKS, CONTIG_STATS) go to the stderr the program started
# with: a program that closes stderr before it exits still gets its leak report, and a file the
# program opened on fd 2 after closing stderr is never written into; the report's frames keep
# their names when the program closed fds 0-2.
set -u
: "${TESTS_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${LIBCONTIG:=$TESTS_SRCDIR/../build/preload/.libs/libcontig.so}"
: "${CC:=cc}"
[ -f "$LIBCONTIG" ] || { echo "FAIL: $LIBCONTIG not built"; exit 1; }
for v in $(env | sed -n 's/^\(CONTIG_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/contig-stderr.XXXXXX") || exit 99
trap 'rm -rf "$TMPD"' EXIT
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

exe=$TMPD/stderr
$CC -g -O0 -fno-omit-frame-pointer -I"$TESTS_SRCDIR/leaks" -o "$exe" "$TESTS_SRCDIR/leaks/stderr.c" ||
	{ echo "FAIL: cannot compile stderr.c"; exit 1; }

run() {   # ENV... -- ARGS: run under the library, stderr to $TMPD/err; sets rc
	envs=
	while [ "$1" != -- ]; do envs="$envs $1"; shift; done
	shift
	env LD_PRELOAD="$LIBCONTIG" $envs "$exe" "$@" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
}

report_ok() {   # WHAT: the report of the one 77-byte leak is in $TMPD/err, status 23
	[ "$rc" -eq 23 ] || bad "$1: exit status $rc, want 23"
	grep -q 'Direct leak of 77 byte(s) in 1 object(s)' "$TMPD/err" || bad "$1: no leak report on stderr"
	grep -q 'in lose ' "$TMPD/err" || bad "$1: the report has no 'lose' frame"
	grep -q 'libcontig: SUMMARY: 77 byte(s) leaked in 1 allocation(s).' "$TMPD/err" ||
		bad "$1: no SUMMARY line"
}

run CONTIG_LEAKS=error -- keep
report_ok "stderr kept"

run CONTIG_LEAKS=error -- close
report_ok "stderr closed"

# With 0, 1 and 2 closed, the symbolizer's socket gets those numbers; its frames must still
# carry names and lines (lose is a static symbol: only addr2line knows it).
run CONTIG_LEAKS=error -- closeall
report_ok "stdin, stdout and stderr closed"
if command -v addr2line >/dev/null 2>&1; then
	grep -q 'in lose .*stderr.c:[0-9]' "$TMPD/err" ||
		bad "stdin, stdout and stderr closed: frame 'lose' without FILE:LINE: $(grep -m1 '#0' "$TMPD/err")"
fi

run CONTIG_LEAKS=error CONTIG_STATS=1 -- reuse "$TMPD/file"
report_ok "fd 2 reused by a file"
[ "$(cat "$TMPD/file")" = mine ] || bad "fd 2 reused by a file: the program's file was written into: $(head -c 300 "$TMPD/file")"
grep -q '^libcontig: statistics' "$TMPD/err" || bad "fd 2 reused by a file: the statistics did not reach stderr"

run CONTIG_STATS=1 -- close
[ "$rc" -eq 0 ] || bad "CONTIG_STATS=1, stderr closed: exit status $rc"
grep -q '^libcontig: statistics' "$TMPD/err" || bad "CONTIG_STATS=1, stderr closed: no statistics"

# The copy is close-on-exec and not at a low number: a program's first open() still gets fd 3.
cat >"$TMPD/fd3.c" <<'EOC'
#include <fcntl.h>
int main(void) { return open("/dev/null", O_RDONLY) == 3 ? 0 : 1; }
EOC
$CC -o "$TMPD/fd3" "$TMPD/fd3.c" && {
	env LD_PRELOAD="$LIBCONTIG" CONTIG_LEAKS=error "$TMPD/fd3" 2>/dev/null ||
		bad "under CONTIG_LEAKS the program's first open() did not get fd 3"
	# sh and env run under the library and each keep a copy; ls, exec'd without it, must see none.
	n=$(env LD_PRELOAD="$LIBCONTIG" CONTIG_LEAKS=error sh -c 'exec env -u LD_PRELOAD ls /proc/self/fd' 2>/dev/null | wc -l)
	m=$(sh -c 'exec ls /proc/self/fd' 2>/dev/null | wc -l)
	[ "$n" = "$m" ] || bad "the copy of stderr leaked across exec ($n fds against $m)"
}

[ $failures -eq 0 ] || exit 1
echo "PASS: exit reports reach the stderr the program started with"
