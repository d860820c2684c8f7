#!/bin/sh
# collide-start.sh - SPEC "Collisions", at start: a non-PIE program run with
# CONTIG_BASE=0x400000 has its own text and data inside the range. It must run with no block
# over its image (t-nopie checks /proc/self/maps and its data), the verbose log and the JSON
# statistics must report the collision with route start, each foreign mapping once (each of the
# image's mappings, though several share a 64 KiB page); with
# CONTIG_ON_COLLISION=abort it must die by SIGABRT after printing the collision and maps line.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-nopie)
set -- CONTIG_BASE=0x400000 CONTIG_SIZE=64M
# 0x400000 is where a non-PIE x86-64/aarch64 executable is linked; elsewhere this test means nothing.
where=$("$t" --where 2>&1)
[ "$where" = 0x400000 ] || skip "t-nopie is not loaded at 0x400000 on this machine ($where): PIE forced?"

run "$@" CONTIG_VERBOSE=1 CONTIG_STATS=json CONTIG_STATS_FILE="$TMPD/stats.json" "$t"
if expect_rc "CONTIG_BASE=0x400000: t-nopie" 0; then
	cat "$TMPD/out"
	grep -q '^libcontig: collision: foreign mapping 0x400000-0x[0-9a-f]* inside the range, found at start; /proc/self/maps: 00400000-[0-9a-f]* r.* .*/t-nopie; skipped$' "$TMPD/err" ||
		{ bad "CONTIG_VERBOSE=1 does not report the collision at start with the program's maps line"; show; }
	[ -s "$TMPD/stats.json" ] || bad "CONTIG_STATS_FILE was not written"
	json_check "$TMPD/stats.json" \
		'j["collision_count"] >= 1' \
		'"start" in routes' \
		'any(int(c["addr"], 16) == 0x400000 and c["route"] == "start" for c in j["collisions"])' \
		'j["collision_count"] == len(j["collisions"]) or j["collision_count"] > 16' \
		'len(set((c["addr"], c["len"]) for c in j["collisions"])) == len(j["collisions"])' ||
		bad "the statistics do not report the start collision exactly once per foreign mapping"
	grep -o '"collision_count":[0-9]*' "$TMPD/stats.json"
	# each of the image's mappings (text, rodata, data: several in one 64 KiB page) is recorded
	segs=$(sed -n 's/^t-nopie: segment \(0x[0-9a-f]*\)-.*/\1,/p' "$TMPD/out" | tr -d '\n')
	json_check "$TMPD/stats.json" \
		"all(any(int(c['addr'], 16) <= s < int(c['addr'], 16) + c['len'] for c in j['collisions']) for s in [$segs])" ||
		bad "not every mapping of the program's image is recorded as a collision (segments: $segs)"
fi

# Quiet without CONTIG_VERBOSE: skip is silent.
run "$@" "$t"
expect_rc "CONTIG_BASE=0x400000 quiet" 0
! grep -q 'collision' "$TMPD/err" || bad "collision printed without CONTIG_VERBOSE or abort"

# CONTIG_ON_COLLISION=abort: the diagnostic, then abort(3).
run "$@" CONTIG_ON_COLLISION=abort "$t"
expect_rc "CONTIG_ON_COLLISION=abort" 134
grep -q '^libcontig: collision: foreign mapping 0x400000-0x[0-9a-f]* inside the range, found at start; /proc/self/maps: 00400000-.*t-nopie; CONTIG_ON_COLLISION=abort$' "$TMPD/err" ||
	{ bad "CONTIG_ON_COLLISION=abort: no collision line with the maps line before the abort"; show; }
[ ! -s "$TMPD/out" ] || bad "CONTIG_ON_COLLISION=abort: the program ran (stdout: $(head -1 "$TMPD/out"))"
finish
