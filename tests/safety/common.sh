# common.sh - helpers for the address-space-safety and memory-control tests; sourced, not run.
# The test environment (tests/Makefile.am, AM_TESTS_ENVIRONMENT) sets LIBCONTIG, TESTS_SRCDIR and
# TESTS_BUILDDIR; by hand they default to the build scripts/setup makes (build/ in the source
# tree). Exit statuses follow automake: 0 pass, 1 fail, 77 skip. CONTIG_TEST_NO_PRELOAD=1 runs
# the programs without the library, to see each test fail under glibc.

: "${TESTS_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${TESTS_BUILDDIR:=$TESTS_SRCDIR/../build/tests}"
: "${LIBCONTIG:=$TESTS_SRCDIR/../build/preload/.libs/libcontig.so}"
: "${CONTIG_TEST_TIMEOUT:=120}"

# The tests set what they need; nothing from the caller's environment leaks in.
for v in $(env | sed -n 's/^\(CONTIG_[A-Z_]*\)=.*/\1/p'); do
	case $v in CONTIG_TEST_*) ;; *) unset "$v" ;; esac
done

ulimit -c 0 2>/dev/null || :        # some cases abort on purpose: no core files

TMPD=$(mktemp -d "${TMPDIR:-/tmp}/contig-safety.XXXXXX") || exit 99
trap 'rm -rf "$TMPD"' EXIT

failures=0
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
finish() {
	[ "$failures" -eq 0 ] || fail "$failures check(s) failed"
	echo "PASS"
	exit 0
}

if [ "${CONTIG_TEST_NO_PRELOAD:-0}" != 1 ]; then
	[ -f "$LIBCONTIG" ] || fail "library $LIBCONTIG not built"
fi

# prog NAME: the path of a helper program built from tests/safety/NAME.c; fails when missing.
prog() {
	_p="$TESTS_BUILDDIR/safety/$1"
	[ -x "$_p" ] || fail "$_p not built"
	echo "$_p"
}

# run [VAR=VALUE...] CMD...: CMD under LD_PRELOAD of the library with a time limit; stdout to
# $TMPD/out, stderr to $TMPD/err; sets rc to the status (128+N when signal N killed it).
run() {
	if [ "${CONTIG_TEST_NO_PRELOAD:-0}" = 1 ]; then
		timeout -k 5 "$CONTIG_TEST_TIMEOUT" env "$@" >"$TMPD/out" 2>"$TMPD/err"
	else
		timeout -k 5 "$CONTIG_TEST_TIMEOUT" env LD_PRELOAD="$LIBCONTIG" "$@" >"$TMPD/out" 2>"$TMPD/err"
	fi
	rc=$?
	return 0
}

# show: the last run's output, indented, for the log.
show() {
	sed 's/^/  out: /' "$TMPD/out" | head -${1:-20}
	sed 's/^/  err: /' "$TMPD/err" | head -${1:-20}
}

# expect_rc WHAT WANT: the last run ended with status WANT, else a failure with its output.
expect_rc() {
	if [ "$rc" -ne "$2" ]; then
		bad "$1: exit status $rc, expected $2"
		show
		return 1
	fi
	return 0
}

# json_check FILE PYTHON-EXPR...: FILE holds one JSON object (parsed as j); each expression must
# be true. Skips when python3 is missing.
json_check() {
	_f=$1
	shift
	command -v python3 >/dev/null 2>&1 || skip "python3 not found (apt-get install python3)"
	python3 - "$_f" "$@" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
try:
    j = json.loads(text)
except Exception as e:
    print("FAIL: not one valid JSON object (%s): %r" % (e, text[:300]))
    sys.exit(1)
if not isinstance(j, dict):
    print("FAIL: JSON is not an object")
    sys.exit(1)
ok = True
for expr in sys.argv[2:]:
    try:
        good = eval(expr, {"j": j, "routes": [c.get("route") for c in j.get("collisions", [])]})
    except Exception as e:
        good = False
        expr += " (%s: %s)" % (type(e).__name__, e)
    if not good:
        print("FAIL: JSON check failed: " + expr)
        ok = False
if not ok:
    print("  json: " + text.strip()[:1500])
sys.exit(0 if ok else 1)
PY
}
