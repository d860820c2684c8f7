#!/bin/sh
# leaks.sh - SPEC CONTIG_LEAKS: a program leaking exactly two blocks of 100 and 7 bytes (t-leak
# leak) is reported with report as 2 blocks, 107 bytes, one block of each size with its address,
# exit status 0; with error it exits 23. A program that frees everything (t-leak clean) exits 0
# under both, with no leak lines. Without CONTIG_LEAKS nothing is printed.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-leak)

run CONTIG_LEAKS=report "$t" leak
if expect_rc "CONTIG_LEAKS=report, leaking" 0; then
	cat "$TMPD/err"
	grep -qx 'libcontig: leaks: 2 blocks, 107 bytes still live at exit' "$TMPD/err" ||
		bad "CONTIG_LEAKS=report: no 'leaks: 2 blocks, 107 bytes' line"
	grep -qx 'libcontig:   1 block of 100 bytes' "$TMPD/err" || bad "CONTIG_LEAKS=report: no group line for 100 bytes"
	grep -qx 'libcontig:   1 block of 7 bytes' "$TMPD/err" || bad "CONTIG_LEAKS=report: no group line for 7 bytes"
	a100=$(sed -n 's/^t-leak: .* blocks at \(0x[0-9a-f]*\) and .*/\1/p' "$TMPD/out")
	a7=$(sed -n 's/^t-leak: .* and \(0x[0-9a-f]*\)$/\1/p' "$TMPD/out")
	grep -qx "libcontig:   leaked 100 bytes at $a100" "$TMPD/err" || bad "CONTIG_LEAKS=report: no 'leaked 100 bytes at $a100'"
	grep -qx "libcontig:   leaked 7 bytes at $a7" "$TMPD/err" || bad "CONTIG_LEAKS=report: no 'leaked 7 bytes at $a7'"
	n=$(grep -c '^libcontig:   leaked ' "$TMPD/err")
	[ "$n" -eq 2 ] || bad "CONTIG_LEAKS=report: $n 'leaked' lines, expected 2"
	grep -q '^t-leak: ' "$TMPD/out" || bad "the program's printf output was lost"
fi

run CONTIG_LEAKS=error "$t" leak
expect_rc "CONTIG_LEAKS=error, leaking" 23
grep -qx 'libcontig: leaks: 2 blocks, 107 bytes still live at exit' "$TMPD/err" || bad "CONTIG_LEAKS=error: no report"
grep -q '^t-leak: ' "$TMPD/out" || bad "CONTIG_LEAKS=error: the program's printf output was lost (not flushed before exit 23)"

for v in report error; do
	run CONTIG_LEAKS=$v "$t" clean
	expect_rc "CONTIG_LEAKS=$v, clean" 0
	! grep -q '^libcontig: leaks:\|^libcontig:   leaked' "$TMPD/err" ||
		{ bad "CONTIG_LEAKS=$v: leak lines for a program that frees everything"; show; }
done

run "$t" leak
expect_rc "no CONTIG_LEAKS" 0
[ ! -s "$TMPD/err" ] || bad "without CONTIG_LEAKS stderr has: $(head -2 "$TMPD/err")"
finish
