#!/bin/sh
# huge.sh - transparent huge pages for big heaps' small runs (docs/design.md, "Huge pages"): a
# thread heap past 2 MiB of small runs grows in 2 MiB chunks advised MADV_HUGEPAGE, in one thread
# and in four; a small heap gets no advice; purged chunks lose it (t-huge reads /proc/self/smaps).
# Skips when the kernel has no transparent huge pages or they are [never].
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-huge)
skipped=0
for m in big small threads; do
	run "$t" $m
	if [ "$rc" -eq 77 ]; then
		cat "$TMPD/out"
		skipped=$((skipped + 1))
		continue
	fi
	expect_rc "t-huge $m" 0 && cat "$TMPD/out"
done
[ "$skipped" -eq 0 ] || skip "no transparent huge pages here"
finish
