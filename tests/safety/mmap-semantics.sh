#!/bin/sh
# mmap-semantics.sh - issue 3, anonymous mmap from the range (t-mmap semantics): served mappings
# are in range, page aligned, zero filled (also reused), with the asked protection (a write to a
# PROT_READ mapping kills a child with SIGSEGV); munmap whole, prefix, suffix and middle leave
# the unmapped part faulting; mprotect; mremap grows in place, shrinks and moves keeping the
# contents; MAP_SHARED, file and PROT_NONE mappings are outside the range; MAP_POPULATE makes the
# pages resident; mmap64. remap: mremap keeps protection, moves PROT_NONE mappings without a
# fault and without touching pages, honours MREMAP_FIXED outside the range and MREMAP_DONTUNMAP as
# the kernel does; MADV_DONTFORK inside a heap block ends with the block. In each mode; with CONTIG_MMAP=0 the mappings must be outside the range
# (the same program then fails its range checks, which this test expects).
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-mmap)
# Whole 64 KiB pages that munmap gives back join the heap's free runs, PROT_NONE until the
# library purges or reuses them (then they read as zero: README, Limitations). A purge falls due
# CONTIG_PURGE_MS after a free; the default 100 ms fell inside one of the checks that an
# unmapped prefix faults, under make -j2 check's load (once in six runs of the suite, this round), so
# the purge delay here is longer than the program runs.
for mode in auto lazy reserve; do
	run CONTIG_MODE=$mode CONTIG_PURGE_MS=60000 "$t" semantics
	expect_rc "CONTIG_MODE=$mode t-mmap semantics" 0 && cat "$TMPD/out"
	run CONTIG_MODE=$mode CONTIG_PURGE_MS=60000 "$t" remap
	expect_rc "CONTIG_MODE=$mode t-mmap remap" 0 && cat "$TMPD/out"
done
run CONTIG_MMAP=0 "$t" semantics
if [ $rc -eq 0 ] || ! grep -q 'not in the range' "$TMPD/err"; then
	bad "CONTIG_MMAP=0: anonymous mappings still served from the range (status $rc)"
	show
fi
finish
