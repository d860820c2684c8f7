# lib.sh - helpers for the LD_PRELOAD test scripts; sourced, not run.
# The test environment (tests/Makefile.am, AM_TESTS_ENVIRONMENT) sets LIBCONTIG, TESTS_SRCDIR and
# TESTS_BUILDDIR (tests/ of the source and build trees; this tier's files are under preload/).
# Exit statuses follow automake: 0 pass, 1 fail, 77 skip.
# CONTIG_TEST_NO_PRELOAD=1 runs the programs without the library, to see a test fail under glibc.

: "${TESTS_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${TESTS_BUILDDIR:=$(pwd)}"
: "${CONTIG_TEST_TIMEOUT:=300}"

DEFAULT_BASE=0xf800000000
DEFAULT_SIZE=64G

ulimit -c 0 2>/dev/null || :     # the misuse tests abort on purpose: no core files

TMPD=$(mktemp -d "${TMPDIR:-/tmp}/contig-test.XXXXXX") || exit 99
trap 'rm -rf "$TMPD"' EXIT

skip() {
	echo "SKIP: $*"
	exit 77
}

fail() {
	echo "FAIL: $*"
	exit 1
}

note() {
	echo "$*"
}

if [ "${CONTIG_TEST_NO_PRELOAD:-0}" != 1 ]; then
	[ -n "${LIBCONTIG:-}" ] || fail "LIBCONTIG is not set (run through make check)"
	[ -f "$LIBCONTIG" ] || fail "library $LIBCONTIG not built"
fi

# run_preloaded CMD...: CMD under LD_PRELOAD of the library, with a time limit; the exit status
# is the program's (128+N if a signal N killed it).
run_preloaded() {
	if [ "${CONTIG_TEST_NO_PRELOAD:-0}" = 1 ]; then
		timeout -k 5 "$CONTIG_TEST_TIMEOUT" "$@"
	else
		timeout -k 5 "$CONTIG_TEST_TIMEOUT" env LD_PRELOAD="$LIBCONTIG${LD_PRELOAD:+ $LD_PRELOAD}" "$@"
	fi
}

# run_env [VAR=VALUE...] -- CMD...: run_preloaded CMD with only the given CONTIG_* settings
# (the others unset), so that a caller's CONTIG_STATS or CONTIG_VERBOSE cannot change the output.
run_env() {
	(
		unset CONTIG_BASE CONTIG_SIZE CONTIG_MODE CONTIG_ON_COLLISION CONTIG_FALLBACK \
		      CONTIG_LIMIT CONTIG_PURGE_MS CONTIG_MMAP CONTIG_STATS CONTIG_STATS_FILE \
		      CONTIG_LEAKS CONTIG_VERBOSE
		while [ $# -gt 0 ] && [ "$1" != -- ]; do
			export "$1"
			shift
		done
		[ "${1:-}" = -- ] && shift
		run_preloaded "$@"
	)
}

# to_bytes VALUE: a CONTIG_SIZE/CONTIG_BASE value (hex or decimal, suffix K M G T) in decimal.
to_bytes() {
	_v=$1
	_shift=0
	case $_v in
	*[kK]) _shift=10 ;;
	*[mM]) _shift=20 ;;
	*[gG]) _shift=30 ;;
	*[tT]) _shift=40 ;;
	esac
	[ $_shift -eq 0 ] || _v=${_v%?}
	echo $(( _v << _shift ))
}

# range_base / range_end: the expected range, from CONTIG_BASE/CONTIG_SIZE or the defaults.
range_base() { to_bytes "${CONTIG_BASE:-$DEFAULT_BASE}"; }
range_end() { echo $(( $(range_base) + $(to_bytes "${CONTIG_SIZE:-$DEFAULT_SIZE}") )); }

# in_range ADDR [BASE END]: true when ADDR (hex 0x… or decimal) lies in [BASE, END), by default
# the range of the environment.
in_range() {
	_a=$(( $1 ))
	_b=${2:-$(range_base)}
	_e=${3:-$(range_end)}
	[ "$_a" -ge "$_b" ] && [ "$_a" -lt "$_e" ]
}

hex() { printf '0x%x' "$1"; }

# need_cmd CMD PACKAGE: make CMD available, installing PACKAGE with apt-get when running as
# root; otherwise skip the test.
need_cmd() {
	command -v "$1" >/dev/null 2>&1 && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "installing $2 for $1"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >"$TMPD/apt.log" 2>&1 ||
			{ DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$TMPD/apt.log" 2>&1 &&
			  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >>"$TMPD/apt.log" 2>&1; } ||
			{ tail -5 "$TMPD/apt.log"; skip "$1 missing and apt-get install $2 failed"; }
		command -v "$1" >/dev/null 2>&1 && return 0
	fi
	skip "$1 not found (apt-get install $2)"
}

# The C helper programs are built in preload/ of the build tree's tests/.
prog() { echo "$TESTS_BUILDDIR/preload/$1"; }

# run_helper NAME [ARGS...]: run a C test program under the library and turn its status into
# the test's result (it prints its own FAIL lines).
run_helper() {
	_p=$(prog "$1")
	shift
	[ -x "$_p" ] || fail "$_p not built"
	run_preloaded "$_p" "$@"
	_rc=$?
	case $_rc in
	0) exit 0 ;;
	77) exit 77 ;;
	124) fail "$(basename "$_p") timed out after ${CONTIG_TEST_TIMEOUT}s" ;;
	1) fail "$(basename "$_p") $*" ;;
	*)
		if [ $_rc -gt 128 ]; then
			fail "$(basename "$_p") $* killed by signal $((_rc - 128)) ($(kill -l $((_rc - 128)) 2>/dev/null))"
		fi
		fail "$(basename "$_p") $* exited with status $_rc"
		;;
	esac
}
