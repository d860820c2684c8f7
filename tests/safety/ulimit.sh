#!/bin/sh
# ulimit.sh - SPEC "ulimit -v": under an RLIMIT_AS of 1 GiB, far below the default 64G range,
# python3 and a C program start, run an allocation workload and keep their heap (python's object
# ids, every C block) inside the range; CONTIG_VERBOSE=1 says auto reserved part of it and cut the
# range to eight times the limit; 100 threads start (their stacks come from libc's own mmap,
# which the library cannot see); a program that reserves most of a 4 GiB limit for itself
# first gets it (auto gives unused reservation back); a 60 MiB heap fits under 100 MiB in every
# mode (the descriptors of the cut range take 4 MiB, not 64); a program that fills the limit with
# blocks and frees them starts threads and maps a file afterwards; in a 512 MiB range a freed
# 100 MiB block and the pages beside it hold 496 MiB. The same in CONTIG_MODE=lazy with
# no limit (nothing reserved) and CONTIG_MODE=reserve (all reserved); under the limit reserve
# takes what auto would, not nothing, and gives it back as auto does.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-range)
base=0xf800000000
end=0x10800000000

# The python workload: fresh objects of many kinds; every id must lie in [base, end).
pyprog='
import sys
base, end = int(sys.argv[1], 0), int(sys.argv[2], 0)
objs = []
for i in range(200000):
    objs.append([i, str(i) * 3, {"k": i}, bytearray(i % 3000), (i, i + 1)])
big = [bytes(1 << 20) for _ in range(64)]          # 64 MiB in large blocks
out = [o for row in objs for o in row[1:]] + big
bad = [hex(id(o)) for o in out if not base <= id(o) < end]
if bad:
    print("FAIL: %d of %d python objects outside the range, e.g. %s" % (len(bad), len(out), bad[:3]))
    sys.exit(1)
print("python: %d objects, all in the range" % len(out))
'

have_python=0
command -v python3 >/dev/null 2>&1 && have_python=1
[ $have_python = 1 ] || note_py="python3 not found: its part is skipped"

# under_ulimit KB CMD...: run in a subshell with RLIMIT_AS set.
under_ulimit() {
	_kb=$1
	shift
	( ulimit -v "$_kb" || exit 99; run "$@"; exit $rc )
	rc=$?
}

# 1. ulimit -v 1 GiB, default mode (auto) and range.
under_ulimit 1048576 CONTIG_VERBOSE=1 "$t"
expect_rc "ulimit -v 1048576: C workload" 0 && cat "$TMPD/out"
grep -q '^libcontig: range 0xf800000000-0xfa00000000; auto: .*reserving part.*; range cut from 64.0 GiB to eight times RLIMIT_AS' "$TMPD/err" ||
	{ bad "ulimit -v 1048576: CONTIG_VERBOSE=1 does not say auto reserved part of the range, cut to 8 GiB"; show; }
grep '^libcontig: range' "$TMPD/err"

# Thread stacks come from libc's internal mmap: auto's reservation must leave them room.
under_ulimit 1048576 "$t" threads 100
expect_rc "ulimit -v 1048576: 100 threads" 0 && cat "$TMPD/out"

# CONTIG_MODE=reserve under the limit: the whole range is refused, so it reserves what auto would
# (not nothing) and says so; the workload and 100 threads run.
under_ulimit 1048576 CONTIG_MODE=reserve CONTIG_VERBOSE=1 "$t"
expect_rc "ulimit -v 1048576, CONTIG_MODE=reserve: C workload" 0 && cat "$TMPD/out"
grep -q '^libcontig: CONTIG_MODE=reserve: RLIMIT_AS refused the whole range; reserved [1-9]' "$TMPD/err" &&
	grep -q '^libcontig: range 0xf800000000-0xfa00000000; CONTIG_MODE=reserve; reserved [1-9]' "$TMPD/err" ||
	{ bad "ulimit -v 1048576, CONTIG_MODE=reserve: CONTIG_VERBOSE=1 does not say it reserved part of the range"; show; }
grep '^libcontig: \(range\|CONTIG_MODE\)' "$TMPD/err"
under_ulimit 1048576 CONTIG_MODE=reserve "$t" threads 100
expect_rc "ulimit -v 1048576, CONTIG_MODE=reserve: 100 threads" 0 && cat "$TMPD/out"

# A program that fills the limit with blocks and frees them starts threads and maps a file
# afterwards, as under glibc (which unmaps its large chunks): the free runs at the top of the heap
# go back to the address space (in lazy mode too, and in auto's reservation).
for m in auto lazy reserve; do
	under_ulimit 400000 CONTIG_MODE=$m "$t" refill
	expect_rc "ulimit -v 400000, CONTIG_MODE=$m: fill, free, threads and a file mapping" 0 && cat "$TMPD/out"
done

# The descriptors of a 64G range would take 64 MiB: under 100 MiB a 60 MiB heap must still fit.
for m in auto lazy reserve; do
	under_ulimit 102400 CONTIG_MODE=$m "$t" heap 60
	expect_rc "ulimit -v 102400, CONTIG_MODE=$m: a 60 MiB heap" 0 && cat "$TMPD/out"
done

# A runtime that reserves address space of its own (Java's heap and class space, SBCL's dynamic
# space) runs under the same limit without the library: auto mode gives up reservation it has
# not used when RLIMIT_AS refuses the program, and says so.
under_ulimit 4194304 CONTIG_VERBOSE=1 "$t" reserve 3700
expect_rc "ulimit -v 4194304: a 3700 MiB reservation of the program's own, then the workload" 0 && cat "$TMPD/out"
grep -q '^libcontig: auto: RLIMIT_AS refused a mapping of 3.6 GiB outside the heap; gave back ' "$TMPD/err" ||
	{ bad "ulimit -v 4194304: no line saying auto gave reservation back"; show; }
# The same in CONTIG_MODE=reserve: cut to auto's share by the limit, it gives it back as auto does.
under_ulimit 4194304 CONTIG_MODE=reserve CONTIG_VERBOSE=1 "$t" reserve 3700
expect_rc "ulimit -v 4194304, CONTIG_MODE=reserve: a 3700 MiB reservation of the program's own" 0 &&
	cat "$TMPD/out"
grep -q '^libcontig: CONTIG_MODE=reserve: RLIMIT_AS refused a mapping of 3.6 GiB outside the heap; gave back ' "$TMPD/err" ||
	{ bad "ulimit -v 4194304, CONTIG_MODE=reserve: no line saying it gave reservation back"; show; }

if [ $have_python = 1 ]; then
	under_ulimit 1048576 python3 -c "$pyprog" $base $end
	expect_rc "ulimit -v 1048576: python3" 0 && cat "$TMPD/out"
	# and in lazy mode under the same limit
	under_ulimit 1048576 CONTIG_MODE=lazy python3 -c "$pyprog" $base $end
	expect_rc "ulimit -v 1048576, CONTIG_MODE=lazy: python3" 0
fi

# 2. a small range: a freed block and the never-used pages beside it hold a block of nearly the
#    whole range (recycled and fresh free runs do not merge when freed). CONTIG_PURGE_MS=0: no
#    purger thread, whose start (glibc callocs its thread's TLS table) would cut a small run
#    from the end of the freed block in this program, which has none of its own yet.
run CONTIG_PURGE_MS=0 CONTIG_SIZE=512M "$t" merge 100
expect_rc "CONTIG_SIZE=512M: 100 MiB freed, then 496 MiB" 0 && cat "$TMPD/out"

# 3. lazy mode, no limit: nothing reserved, the heap still in the range.
run CONTIG_MODE=lazy CONTIG_VERBOSE=1 "$t"
expect_rc "CONTIG_MODE=lazy: C workload" 0
grep -q '^libcontig: range 0x[0-9a-f]*-0x[0-9a-f]*; CONTIG_MODE=lazy; reserved 0' "$TMPD/err" ||
	{ bad "CONTIG_MODE=lazy: CONTIG_VERBOSE=1 does not say lazy with nothing reserved"; show; }
grep '^libcontig: range' "$TMPD/err"
if [ $have_python = 1 ]; then
	run CONTIG_MODE=lazy python3 -c "$pyprog" $base $end
	expect_rc "CONTIG_MODE=lazy: python3" 0
fi

# 4. reserve and auto with no limit: the whole range reserved.
run CONTIG_MODE=reserve CONTIG_VERBOSE=1 "$t"
expect_rc "CONTIG_MODE=reserve: C workload" 0
grep -q '^libcontig: range 0x[0-9a-f]*-0x[0-9a-f]*; CONTIG_MODE=reserve; reserved 64' "$TMPD/err" ||
	{ bad "CONTIG_MODE=reserve: CONTIG_VERBOSE=1 does not say reserve, 64 GiB reserved"; show; }
( ulimit -v unlimited 2>/dev/null; run CONTIG_VERBOSE=1 "$t"; exit $rc )
rc=$?
expect_rc "auto without RLIMIT_AS: C workload" 0
if [ "$(ulimit -v)" = unlimited ]; then
	grep -q '^libcontig: range .*; auto: no RLIMIT_AS, reserving the whole range' "$TMPD/err" ||
		{ bad "auto without RLIMIT_AS: CONTIG_VERBOSE=1 does not say the whole range is reserved"; show; }
fi

# 5. a limit that cannot hold even the C workload's reservation of 200 MiB in lazy steps still
#    starts the program and keeps the heap in the range: ulimit -v 512 MiB.
under_ulimit 524288 CONTIG_VERBOSE=1 "$t"
expect_rc "ulimit -v 524288: C workload" 0
grep '^libcontig: range' "$TMPD/err"

[ -z "${note_py:-}" ] || echo "$note_py"
finish
