# common.sh - set-up for the tests of the contig launcher and the man pages; sourced, not run.
# From make check: LIBCONTIG, TESTS_SRCDIR and TESTS_BUILDDIR come from AM_TESTS_ENVIRONMENT.
# By hand: sh tests/tools/run.sh (LIBCONTIG defaults to /tmp/lb/preload/.libs/libcontig.so).
# The launcher under test is scripts/contig.py itself, run with CONTIG_LIB under $PY, so nothing is
# installed.

: "${TESTS_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${TESTS_BUILDDIR:=$(pwd)}"
: "${LIBCONTIG:=/tmp/lb/preload/.libs/libcontig.so}"
TOP_SRCDIR=$(cd "$TESTS_SRCDIR/.." && pwd)
CONTIG="$TOP_SRCDIR/scripts/contig.py"

TMPD=$(mktemp -d "${TMPDIR:-/tmp}/contig-tools.XXXXXX") || exit 99
trap 'rm -rf "$TMPD"' EXIT
failures=0

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
finish() { [ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }; exit 0; }

[ -f "$CONTIG" ] || fail "$CONTIG not found"
[ -f "$LIBCONTIG" ] || fail "library $LIBCONTIG not built"

# The launcher as users run it, with the library under test and none of the caller's CONTIG_*.
contig() {
	(
		unset CONTIG_BASE CONTIG_SIZE CONTIG_MODE CONTIG_ON_COLLISION CONTIG_FALLBACK \
		      CONTIG_LIMIT CONTIG_PURGE_MS CONTIG_MMAP CONTIG_STATS CONTIG_STATS_FILE \
		      CONTIG_LEAKS CONTIG_VERBOSE CONTIG_CHECK_MAPS CONTIG_LEAKS_SUPPRESS CONTIG_MAP_FILE
		CONTIG_LIB=$LIBCONTIG timeout -k 5 60 "$PY" "$CONTIG" "$@"
	)
}

# The system python3, not a wrapper script (pyenv shims and the like), when there is one: the one
# `make` writes into the launcher's #! line (scripts/local.mk).
find_python() {
	PY=
	[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
	[ -n "$PY" ] || PY=$(command -v python3 2>/dev/null) || :
	[ -n "$PY" ] || skip "python3 not found"
}
find_python

# expect_status WANT LABEL CMD...: run CMD (output in $TMPD/out, $TMPD/err), check its status.
expect_status() {
	_want=$1 _label=$2
	shift 2
	"$@" >"$TMPD/out" 2>"$TMPD/err"
	_rc=$?
	if [ "$_rc" -ne "$_want" ]; then
		bad "$_label: exit status $_rc, want $_want; stderr: $(head -3 "$TMPD/err")"
		return 1
	fi
	return 0
}

configured_version() {
	sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$TOP_SRCDIR/configure.ac"
}
