#!/bin/sh
# limit.sh - SPEC CONTIG_LIMIT=<size>: with 64M, malloc/calloc/realloc/mmap past the limit give
# NULL (MAP_FAILED) with ENOMEM near 64 MiB, the process keeps running, freeing makes room again
# and the statistics count limit hits (t-limit; also the JSON); C++ new throws std::bad_alloc
# (t-limit-cxx); the runs a thread heap keeps empty go back before a request fails (giveback);
# a PROT_NONE reservation under CONTIG_MMAP=all is served from the range and committed only as
# its pages are made accessible (reserve, reserve-random: SPEC, "not address space").
# Bad values (-5, 12Q) print SPEC's one line and the program runs on, unlimited.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-limit)
run CONTIG_LIMIT=64M CONTIG_STATS=json CONTIG_STATS_FILE="$TMPD/stats.json" "$t" 64
if expect_rc "CONTIG_LIMIT=64M t-limit" 0; then
	cat "$TMPD/out"
	json_check "$TMPD/stats.json" 'j["limit"] == 64 << 20' 'j["limit_hits"] > 0' \
		'j["committed_peak"] <= 64 << 20' || bad "CONTIG_LIMIT=64M: the JSON statistics disagree"
fi
run CONTIG_LIMIT=64M CONTIG_VERBOSE=1 "$t" 64
grep -q '^libcontig: CONTIG_LIMIT reached' "$TMPD/err" || bad "CONTIG_VERBOSE=1 does not log the limit hits"

# CONTIG_FALLBACK=system serves what the range cannot, never what the limit refuses
run CONTIG_LIMIT=64M CONTIG_FALLBACK=system "$t" 64
expect_rc "CONTIG_LIMIT=64M CONTIG_FALLBACK=system t-limit" 0 && cat "$TMPD/out"

# aligned blocks: only the pages taken count, not the room searched for an aligned place
run CONTIG_LIMIT=64M "$t" aligned
expect_rc "CONTIG_LIMIT=64M t-limit aligned" 0 && cat "$TMPD/out"

# the empty runs a thread heap keeps go back before a request fails, and the retry is not a hit
run CONTIG_LIMIT=4M CONTIG_PURGE_MS=60000 "$t" giveback
expect_rc "CONTIG_LIMIT=4M t-limit giveback" 0 && cat "$TMPD/out"

# a PROT_NONE reservation served under CONTIG_MMAP=all is address space, committed only as the
# program makes its pages accessible
run CONTIG_MMAP=all CONTIG_LIMIT=16M CONTIG_PURGE_MS=0 "$t" reserve
expect_rc "CONTIG_MMAP=all CONTIG_LIMIT=16M t-limit reserve" 0 && cat "$TMPD/out"
# random commits, uncommits, growth and unmaps of reservations keep the accounting exact
for lim in none 4M; do
	run CONTIG_MMAP=all CONTIG_LIMIT=$lim CONTIG_PURGE_MS=0 "$t" reserve-random 20000
	expect_rc "CONTIG_MMAP=all CONTIG_LIMIT=$lim t-limit reserve-random" 0 && cat "$TMPD/out"
done

# realloc growth in place returns freed pages before it gives up
run CONTIG_LIMIT=100M CONTIG_PURGE_MS=60000 "$t" grow
expect_rc "CONTIG_LIMIT=100M t-limit grow" 0 && cat "$TMPD/out"

cxx="$TESTS_BUILDDIR/safety/t-limit-cxx"
if [ -x "$cxx" ]; then
	run CONTIG_LIMIT=64M "$cxx"
	expect_rc "CONTIG_LIMIT=64M t-limit-cxx" 0 && cat "$TMPD/out"
else
	echo "note: $cxx not built (no C++ compiler?): the C++ part is skipped"
fi

# Without the limit the same program is not stopped at 64 MiB: it must fail its own check.
run "$t" 64
[ $rc -ne 0 ] || bad "without CONTIG_LIMIT, t-limit 64 passed: the test cannot tell a limit from none"

r=$(prog t-range)
for v in -5 12Q; do
	run CONTIG_LIMIT="$v" "$r"
	expect_rc "CONTIG_LIMIT=$v" 0
	grep -qx "libcontig: CONTIG_LIMIT=\"$v\" is not a size or \"cgroup\" .*; using none" "$TMPD/err" ||
		{ bad "CONTIG_LIMIT=$v: no one-line complaint naming the variable, value and fallback"; show; }
	[ "$(wc -l <"$TMPD/err")" -eq 1 ] || bad "CONTIG_LIMIT=$v: more than one line on stderr"
done
finish
