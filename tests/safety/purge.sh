#!/bin/sh
# purge.sh - SPEC "Memory limit and purging": 512 MiB touched in 64 KiB blocks and freed goes back
# to the OS (RSS from /proc/self/statm within 32 MiB of the start) within CONTIG_PURGE_MS with no
# further call (default 100 ms and 50 ms; sleep 3x), at once with CONTIG_PURGE_MS=0, and at once
# on malloc_trim(0) and contig_purge() while CONTIG_PURGE_MS=60000 keeps the purger away (t-purge
# checks the memory is still resident before the call). The JSON counts the purged bytes. The tail
# a realloc cuts off goes back at once under CONTIG_PURGE_MS=0; an exited thread's blocks freed by
# another thread go back in time with no further call, so do a live thread's blocks another thread
# freed (handoff), and so do the first runs an exited thread leaves for the next one (which gets them as they were: adopt). Freed mlock'ed blocks handed out
# again by calloc or mmap read as zero (MADV_DONTNEED refuses locked pages).
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-purge)
run CONTIG_STATS=json CONTIG_STATS_FILE="$TMPD/stats.json" "$t" delay
if expect_rc "default CONTIG_PURGE_MS, t-purge delay" 0; then
	cat "$TMPD/out"
	json_check "$TMPD/stats.json" 'j["purged_bytes"] >= 480 << 20' || bad "the JSON does not count the purged bytes"
fi
run CONTIG_PURGE_MS=50 "$t" delay
expect_rc "CONTIG_PURGE_MS=50 t-purge delay" 0 && cat "$TMPD/out"
run CONTIG_PURGE_MS=0 "$t" zero
expect_rc "CONTIG_PURGE_MS=0 t-purge zero" 0 && cat "$TMPD/out"
run CONTIG_PURGE_MS=60000 "$t" trim
expect_rc "CONTIG_PURGE_MS=60000 t-purge trim" 0 && cat "$TMPD/out"
run CONTIG_PURGE_MS=60000 "$t" purge
expect_rc "CONTIG_PURGE_MS=60000 t-purge purge" 0 && cat "$TMPD/out"
run CONTIG_PURGE_MS=0 "$t" shrink
expect_rc "CONTIG_PURGE_MS=0 t-purge shrink" 0 && cat "$TMPD/out"
for ms in 0 60000; do
	run CONTIG_PURGE_MS=$ms "$t" locked
	if [ "$rc" -ne 77 ]; then
		expect_rc "CONTIG_PURGE_MS=$ms t-purge locked" 0 && cat "$TMPD/out"
	else
		cat "$TMPD/out"
	fi
done
run "$t" orphan
expect_rc "default CONTIG_PURGE_MS, t-purge orphan" 0 && cat "$TMPD/out"
run "$t" handoff
expect_rc "default CONTIG_PURGE_MS, t-purge handoff" 0 && cat "$TMPD/out"
run "$t" handoff late
expect_rc "default CONTIG_PURGE_MS, t-purge handoff late" 0 && cat "$TMPD/out"
# An exited thread's first runs wait for the next thread (which gets them as they were left), and
# go back within the delay all the same; with CONTIG_PURGE_MS=0 nothing waits.
run CONTIG_PURGE_MS=10000 "$t" adopt kept
expect_rc "CONTIG_PURGE_MS=10000 t-purge adopt kept" 0 && cat "$TMPD/out"
run CONTIG_PURGE_MS=0 "$t" adopt none
expect_rc "CONTIG_PURGE_MS=0 t-purge adopt none" 0 && cat "$TMPD/out"
run "$t" exited
expect_rc "default CONTIG_PURGE_MS, t-purge exited" 0 && cat "$TMPD/out"
run CONTIG_PURGE_MS=50 "$t" exited
expect_rc "CONTIG_PURGE_MS=50 t-purge exited" 0 && cat "$TMPD/out"
# The rule can fail: with a 60 s delay and no call, memory stays resident.
run CONTIG_PURGE_MS=60000 "$t" zero
[ $rc -ne 0 ] || bad "with CONTIG_PURGE_MS=60000 the memory came back at once: the delay is not honoured"
finish
