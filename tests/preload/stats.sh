#!/bin/sh
# stats.sh - CONTIG_STATS=1 prints, at exit, a readable summary on stderr (every line starting
# "libcontig:") with the base in hex, the mode, reserved, committed, peak, live and malloc calls.
# Without CONTIG_STATS nothing is printed.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

p=$(prog t-basic)
[ -x "$p" ] || fail "$p not built"
failures=0

bad() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

summary() {   # HEX_BASE [VAR=VALUE...]
	want=$1
	shift
	run_env CONTIG_STATS=1 "$@" -- "$p" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	[ $rc -eq 0 ] || { bad "CONTIG_STATS=1 $*: exit status $rc"; return; }
	[ -s "$TMPD/err" ] || { bad "CONTIG_STATS=1 $*: no summary on stderr"; return; }
	stray=$(grep -v '^libcontig:' "$TMPD/err" | head -3)
	[ -z "$stray" ] || bad "CONTIG_STATS=1 $*: summary lines not starting 'libcontig:': $stray"
	grep -qi -- "$want" "$TMPD/err" || bad "CONTIG_STATS=1 $*: base $want not in the summary"
	for w in mode reserved committed peak live malloc; do
		grep -i '^libcontig:' "$TMPD/err" | grep -qi -- "$w" ||
			bad "CONTIG_STATS=1 $*: '$w' not in the summary"
	done
	# t-basic makes 106 allocations: a summary with a smaller malloc count is not counting.
	calls=$(grep -i '^libcontig:.*malloc' "$TMPD/err" | head -1 |
		sed -n 's/.*[Mm][Aa][Ll][Ll][Oo][Cc][^0-9]*\([0-9][0-9]*\).*/\1/p')
	[ -n "$calls" ] && [ "$calls" -ge 106 ] ||
		bad "CONTIG_STATS=1 $*: malloc calls '${calls}' not shown or fewer than the 106 made"
	echo "--- CONTIG_STATS=1 $*"
	cat "$TMPD/err"
}

summary 0xf800000000
summary 0x100000000000 CONTIG_BASE=0x100000000000 CONTIG_SIZE=4G

# Quiet by default.
run_env -- "$p" >"$TMPD/out" 2>"$TMPD/err" || bad "t-basic failed without CONTIG_STATS"
[ ! -s "$TMPD/err" ] || bad "without CONTIG_STATS stderr has: $(head -3 "$TMPD/err")"
run_env CONTIG_STATS=0 -- "$p" >"$TMPD/out" 2>"$TMPD/err" || bad "t-basic failed with CONTIG_STATS=0"
[ ! -s "$TMPD/err" ] || bad "with CONTIG_STATS=0 stderr has: $(head -3 "$TMPD/err")"
[ $failures -eq 0 ] || fail "$failures statistics check(s) wrong"
