#!/bin/sh
# determinism.sh - SPEC "Determinism": a single-threaded program run twice with the same input and
# environment gets the same heap addresses (t-determ: blocks of every size, frees, mappings,
# reallocs, a forked child's blocks), in every CONTIG_MODE; and the same ones again when it pauses
# long enough after its frees for the purger to give their pages back (where the next blocks go
# must not depend on when the purger ran: it did, before purging stopped moving free runs).
# python3 (PYTHONHASHSEED=0) run three times gets the same ids for the objects it makes (small
# ints live in the binary, where ASLR moves them: not compared).
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

t="$TESTS_BUILDDIR/preload/t-determ"
[ -x "$t" ] || fail "$t not built"
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

for mode in auto lazy reserve; do
	for run in a b; do
		run_env CONTIG_MODE=$mode -- "$t" 0 >"$TMPD/$mode.$run" 2>"$TMPD/err" ||
			{ bad "CONTIG_MODE=$mode t-determ: exit status $?"; cat "$TMPD/err"; continue 2; }
	done
	# a pause of 250 ms after the frees (the default CONTIG_PURGE_MS is 100), and CONTIG_PURGE_MS=0
	run_env CONTIG_MODE=$mode -- "$t" 250 >"$TMPD/$mode.pause" 2>"$TMPD/err" || bad "CONTIG_MODE=$mode t-determ 250: exit status $?"
	run_env CONTIG_MODE=$mode CONTIG_PURGE_MS=0 -- "$t" 0 >"$TMPD/$mode.now" 2>"$TMPD/err" || bad "CONTIG_MODE=$mode CONTIG_PURGE_MS=0 t-determ: exit status $?"
	n=$(wc -l <"$TMPD/$mode.a")
	[ "$n" -ge 100 ] || bad "CONTIG_MODE=$mode: t-determ printed $n lines"
	cmp -s "$TMPD/$mode.a" "$TMPD/$mode.b" || { bad "CONTIG_MODE=$mode: two runs got different addresses"; diff "$TMPD/$mode.a" "$TMPD/$mode.b" | head -5; }
	cmp -s "$TMPD/$mode.a" "$TMPD/$mode.pause" || { bad "CONTIG_MODE=$mode: a pause after the frees changed the addresses"; diff "$TMPD/$mode.a" "$TMPD/$mode.pause" | head -5; }
	cmp -s "$TMPD/$mode.a" "$TMPD/$mode.now" || { bad "CONTIG_MODE=$mode: CONTIG_PURGE_MS=0 changed the addresses"; diff "$TMPD/$mode.a" "$TMPD/$mode.now" | head -5; }
	grep -q '^malloc 0xf8' "$TMPD/$mode.a" || bad "CONTIG_MODE=$mode: blocks not in the range"
	note "ok: CONTIG_MODE=$mode: $n addresses, the same in four runs"
done

if command -v python3 >/dev/null 2>&1; then
	py='import time
objs = [[i, str(i) * 5, {"k": i}, bytearray(i % 5000)] for i in range(20000)]
del objs[::3]
time.sleep(float(__import__("sys").argv[1]))
more = [bytes(1000 + i) for i in range(2000)]
print([id(o) for row in objs[:200] for o in row[1:]] + [id(m) for m in more])'
	for s in 0.00 0.00 0.25; do   # one length: argv is on the heap too
		PYTHONHASHSEED=0 run_env -- python3 -c "$py" $s >"$TMPD/py.$s.$(ls "$TMPD" | wc -l)" 2>"$TMPD/err" ||
			{ bad "python3: exit status $?"; cat "$TMPD/err"; }
	done
	first=$(ls "$TMPD"/py.* | head -1)
	for f in "$TMPD"/py.*; do
		cmp -s "$first" "$f" || bad "python3: object ids differ between runs ($(basename "$f"))"
	done
	note "ok: python3: the same object ids in three runs"
else
	note "python3 not found: its part is skipped"
fi
[ $failures -eq 0 ] || fail "$failures determinism check(s) failed"
echo "PASS: determinism"
