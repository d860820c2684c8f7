#!/bin/sh
# mix-threads.sh - issue 3: two threads mixing malloc and anonymous mmap heavily for 3 seconds,
# each freeing and unmapping what the other made (t-mix): every object in the range, intact.
# Also in lazy mode, where the heap grows while both threads map.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-mix)
run "$t" 3
expect_rc "t-mix (auto)" 0 && cat "$TMPD/out"
run CONTIG_MODE=lazy "$t" 2
expect_rc "t-mix (CONTIG_MODE=lazy)" 0 && cat "$TMPD/out"
finish
