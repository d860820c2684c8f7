#!/bin/sh
# collide-grow.sh - SPEC "Collisions", while growing lazily: in CONTIG_MODE=lazy a foreign mapping
# placed with a raw mmap(MAP_FIXED_NOREPLACE) at base + 64 MiB survives 256 MiB of allocations
# past it, no block overlaps it, and the API, the JSON statistics and the verbose log report it
# with route grow; CONTIG_ON_COLLISION=abort ends the program with SIGABRT after the diagnostic.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-collide)

run CONTIG_MODE=lazy CONTIG_VERBOSE=1 CONTIG_STATS=json CONTIG_STATS_FILE="$TMPD/stats.json" "$t" grow
[ $rc -eq 77 ] && skip "$(cat "$TMPD/out")"
if expect_rc "CONTIG_MODE=lazy t-collide grow" 0; then
	cat "$TMPD/out"
	grep -q '^libcontig: collision: foreign mapping 0xf804000000-0xf804100000 inside the range, found while growing lazily; /proc/self/maps: f804000000-f804100000 rw-p .*; skipped$' "$TMPD/err" ||
		{ bad "CONTIG_VERBOSE=1: no collision line for the foreign mapping, route grow"; show; }
	json_check "$TMPD/stats.json" '"grow" in routes' \
		'any(c["addr"] == "0xf804000000" and c["len"] == 1 << 20 and c["route"] == "grow" for c in j["collisions"])' ||
		bad "CONTIG_STATS=json does not list the collision at 0xf804000000 with route grow"
fi

run CONTIG_MODE=lazy CONTIG_ON_COLLISION=abort "$t" grow
expect_rc "CONTIG_ON_COLLISION=abort" 134
grep -q '^libcontig: collision: foreign mapping 0xf804000000-0xf804100000 inside the range, found while growing lazily; /proc/self/maps: f804000000-f804100000 .*CONTIG_ON_COLLISION=abort$' "$TMPD/err" ||
	{ bad "CONTIG_ON_COLLISION=abort: no diagnostic with the maps line"; show; }
finish
