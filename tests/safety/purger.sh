#!/bin/sh
# purger.sh - the library's threads and locks stay out of the program's way (t-purger): a signal
# the program blocks and takes with sigtimedwait is never delivered to the purger thread; a raw
# clone(CLONE_VM) child that frees large blocks ends (it must not start a thread); frees from
# two threads into exited threads' heaps leave nothing live behind, however they contend for the
# heaps' locks (5 runs: it was 4 in 5 before).
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-purger)
run "$t" sigwait
expect_rc "t-purger sigwait" 0 && cat "$TMPD/out"
run CONTIG_PURGE_MS=1 "$t" sigwait
expect_rc "CONTIG_PURGE_MS=1 t-purger sigwait" 0
run "$t" clonevm
expect_rc "t-purger clonevm" 0 && cat "$TMPD/out"
for i in 1 2 3 4 5; do
	run "$t" abandon
	expect_rc "t-purger abandon (run $i)" 0 && cat "$TMPD/out"
done
finish
