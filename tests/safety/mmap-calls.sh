#!/bin/sh
# mmap-calls.sh - SPEC "Collisions", through the interposed calls (t-mmap calls): mmap MAP_FIXED
# over live heap blocks -> ENOMEM, MAP_FIXED_NOREPLACE -> EEXIST, munmap/mprotect/madvise/mremap
# of heap pages the caller does not own -> -1, contents intact and the heap still working, each
# counted as a collision (route mmap, also in the JSON); a hint inside the range for a file or
# shared mapping is moved out; MAP_FIXED over free range pages is honoured and recorded, and no
# block lands in it until it is unmapped. In each mode.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-mmap)
for mode in auto lazy reserve; do
	run CONTIG_MODE=$mode CONTIG_VERBOSE=1 CONTIG_STATS=json CONTIG_STATS_FILE="$TMPD/stats.json" "$t" calls
	expect_rc "CONTIG_MODE=$mode t-mmap calls" 0 || continue
	cat "$TMPD/out"
	grep -q '^libcontig: mmap(0x[0-9a-f]*, [0-9]*): refused, it would replace live heap blocks$' "$TMPD/err" ||
		bad "CONTIG_MODE=$mode: no verbose line for the refused mmap(MAP_FIXED)"
	grep -q '^libcontig: collision: foreign mapping .* found through an mmap-family call; skipped$' "$TMPD/err" ||
		bad "CONTIG_MODE=$mode: no verbose collision line for route mmap"
	json_check "$TMPD/stats.json" '"mmap" in routes' || bad "CONTIG_MODE=$mode: no route mmap in the JSON"
done
finish
