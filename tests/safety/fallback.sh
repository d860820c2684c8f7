#!/bin/sh
# fallback.sh - SPEC CONTIG_FALLBACK: with an 8 MiB range, 64 MiB in 1 MiB blocks, small blocks
# and a 16 MiB mmap (t-fallback). system: all succeed, the overflow lies outside the range and
# is counted as fallback bytes (API and JSON), 10,000 fallback blocks live at once, realloc past
# the range, a second free of a fallback block caught; none (the default): NULL/MAP_FAILED with ENOMEM,
# nothing outside the range, the program carries on and exits 0.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-fallback)
run CONTIG_SIZE=8M CONTIG_FALLBACK=system CONTIG_STATS=json CONTIG_STATS_FILE="$TMPD/stats.json" "$t" system
if expect_rc "CONTIG_FALLBACK=system" 0; then
	cat "$TMPD/out"
	json_check "$TMPD/stats.json" 'j["fallback_bytes"] >= 56 << 20' ||
		bad "CONTIG_FALLBACK=system: the JSON does not count the bytes served outside"
fi
run CONTIG_SIZE=8M CONTIG_FALLBACK=system "$t" fork
expect_rc "CONTIG_FALLBACK=system, fork with a thread in the fallback table" 0 && cat "$TMPD/out"
run CONTIG_SIZE=8M CONTIG_FALLBACK=system "$t" double-free
if expect_rc "CONTIG_FALLBACK=system, a fallback block freed twice" 134; then
	ptr=$(sed -n 's/^ptr //p' "$TMPD/out")
	grep -q "^libcontig: free(): invalid pointer $ptr" "$TMPD/err" ||
		bad "a fallback block freed twice: no 'free(): invalid pointer $ptr'"
fi
run CONTIG_SIZE=8M CONTIG_FALLBACK=none "$t" none
expect_rc "CONTIG_FALLBACK=none" 0 && cat "$TMPD/out"
run CONTIG_SIZE=8M "$t" none
expect_rc "CONTIG_FALLBACK unset (none)" 0
finish
