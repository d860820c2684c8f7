#!/bin/sh
# collide-maps.sh - SPEC "Collisions", raw system calls: in CONTIG_MODE=reserve the program
# replaces reserved, not yet used pages at base + 256 MiB with a raw mmap(MAP_FIXED), fills them,
# then allocates 320 MiB past them: the pattern survives, no block overlaps them, the collision
# is reported with route maps (API, JSON, verbose) and CONTIG_ON_COLLISION=abort aborts; the same
# for a PROT_NONE mapping there (reserve and auto), which is not the library's reservation. A free,
# realloc or malloc_usable_size of a pointer into a foreign mapping far beyond the heap (not seen
# by the library yet) is ignored / ENOMEM / 0 in every mode, and recorded.
# CONTIG_CHECK_MAPS=0 turns the /proc/self/maps check off: then the program must run (exit 0) and
# the collision must go unnoticed (blocks land on the foreign pages), which shows that this
# check, and nothing else, is what finds such a mapping.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-collide)

run CONTIG_MODE=reserve CONTIG_VERBOSE=1 CONTIG_STATS=json CONTIG_STATS_FILE="$TMPD/stats.json" "$t" maps
if expect_rc "CONTIG_MODE=reserve t-collide maps" 0; then
	cat "$TMPD/out"
	grep -q '^libcontig: collision: foreign mapping 0xf810000000-0xf810100000 inside the range, found in /proc/self/maps before using reserved pages; /proc/self/maps: f810000000-f810100000 rw-p .*; skipped$' "$TMPD/err" ||
		{ bad "CONTIG_VERBOSE=1: no collision line for the foreign mapping, route maps"; show; }
	json_check "$TMPD/stats.json" '"maps" in routes' \
		'any(int(c["addr"], 16) <= 0xf810000000 < int(c["addr"], 16) + c["len"] and c["route"] == "maps" for c in j["collisions"])' ||
		bad "CONTIG_STATS=json does not list the collision at 0xf810000000 with route maps"
fi

run CONTIG_MODE=reserve CONTIG_ON_COLLISION=abort "$t" maps
expect_rc "CONTIG_ON_COLLISION=abort" 134
grep -q '^libcontig: collision: foreign mapping 0xf810000000-0xf810100000 inside the range, found in /proc/self/maps .*; /proc/self/maps: f810000000-f810100000 .*CONTIG_ON_COLLISION=abort$' "$TMPD/err" ||
	{ bad "CONTIG_ON_COLLISION=abort: no diagnostic with the maps line"; show; }

# a PROT_NONE mapping over reserved pages (a runtime's own arena, made by a raw system call) looks
# like the library's reservation in /proc/self/maps; it lacks MAP_NORESERVE, which tells it apart
for m in reserve auto; do
	run CONTIG_MODE=$m CONTIG_VERBOSE=1 "$t" none
	if expect_rc "CONTIG_MODE=$m t-collide none" 0; then
		cat "$TMPD/out"
		grep -q '^libcontig: collision: foreign mapping 0xf810000000-0xf810100000 inside the range, found in /proc/self/maps' "$TMPD/err" ||
			{ bad "CONTIG_MODE=$m t-collide none: no collision line"; show; }
	fi
done

# free and realloc of pointers into a foreign mapping the heap has not reached yet: the library
# looks in /proc/self/maps before it calls them invalid, in every mode
for m in reserve auto lazy; do
	run CONTIG_MODE=$m CONTIG_VERBOSE=1 "$t" free
	if expect_rc "CONTIG_MODE=$m t-collide free" 0; then
		cat "$TMPD/out"
		grep -q '^libcontig: free(): ignoring 0xfa00000000, inside a foreign mapping$' "$TMPD/err" ||
			{ bad "CONTIG_MODE=$m: no verbose line for the ignored free"; show; }
	fi
done

run CONTIG_MODE=reserve CONTIG_CHECK_MAPS=0 "$t" maps --no-detect
expect_rc "CONTIG_CHECK_MAPS=0: the collision should go unnoticed" 0 && cat "$TMPD/out"
finish
