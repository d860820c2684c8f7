#!/bin/sh
# stats-json.sh - issue 4, statistics: CONTIG_STATS=json is one valid JSON object (python3's json
# module) with the expected keys and sane values for t-stats's known workload (live blocks and
# bytes, calls by kind, committed >= live, peaks >= now, range and mode); CONTIG_STATS_FILE
# writes it to a file and not to stderr, one per process with %p; malloc_stats() prints the library's summary
# ("libcontig:" lines) on stderr; mallinfo2()/mallinfo() agree with the statistics (t-stats); the
# library's writes into a pipe with no reader never kill the program with SIGPIPE.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-stats)
keys='["base","size","mode","reserved","mapped","committed","committed_peak","resident_peak","live_blocks","live_bytes","calls","mmap_bytes","purged_bytes","fallback_bytes","limit","limit_hits","collision_count","collisions"]'

run CONTIG_STATS=json "$t"
if expect_rc "CONTIG_STATS=json t-stats" 0; then
	cat "$TMPD/out"
	# stderr: malloc_stats()'s summary lines, then the JSON object (everything from the first "{").
	sed -n '/^{/,$p' "$TMPD/err" >"$TMPD/stats.json"
	grep -q '^libcontig:   live ' "$TMPD/err" || bad "malloc_stats() printed no 'libcontig:   live' line"
	stray=$(sed '/^{/,$d' "$TMPD/err" | grep -v '^libcontig:' | head -3)
	[ -z "$stray" ] || bad "malloc_stats() printed lines not starting 'libcontig:': $stray"
	json_check "$TMPD/stats.json" \
		"all(k in j for k in $keys)" \
		'j["base"] == "0xf800000000" and j["size"] == 64 << 30 and j["mode"] == "auto"' \
		'j["reserved"] == 64 << 30' \
		'j["live_blocks"] >= 610 and j["live_bytes"] >= 600 * 100 + 10 * (1 << 20)' \
		'j["live_bytes"] <= 16 * (1 << 20)' \
		'j["calls"]["malloc"] >= 1011 and j["calls"]["free"] >= 401' \
		'j["calls"]["realloc"] >= 50 and j["calls"]["mmap"] >= 3' \
		'j["mmap_bytes"] >= 3 * 256 * 1024' \
		'j["committed"] >= j["live_bytes"] and j["committed_peak"] >= j["committed"]' \
		'j["mapped"] >= j["committed"] and j["resident_peak"] >= 10 << 20' \
		'j.get("resident", j["resident_peak"]) <= j["resident_peak"]' \
		'j["limit"] == 0 and j["limit_hits"] == 0 and j["fallback_bytes"] == 0' \
		'j["collision_count"] == 0 and j["collisions"] == []' ||
		bad "CONTIG_STATS=json: wrong JSON"
fi

# exact call counts (realloc counted as realloc only) need no purger thread
run CONTIG_PURGE_MS=0 "$t"
expect_rc "CONTIG_PURGE_MS=0 t-stats" 0 && grep reallocs "$TMPD/out"

run CONTIG_STATS=json CONTIG_STATS_FILE="$TMPD/file.json" "$t"
expect_rc "CONTIG_STATS_FILE t-stats" 0
[ -s "$TMPD/file.json" ] || bad "CONTIG_STATS_FILE: $TMPD/file.json not written"
! grep -q '^{' "$TMPD/err" || bad "CONTIG_STATS_FILE: the JSON still went to stderr"
json_check "$TMPD/file.json" "all(k in j for k in $keys)" || bad "CONTIG_STATS_FILE: wrong JSON"

# %p in the name is the process ID: a program and the children it runs under the same
# environment each write their own file (without it, the last one to exit overwrote the rest)
run CONTIG_STATS=json CONTIG_STATS_FILE="$TMPD/pid.%p.json" sh -c '"$1" >/dev/null; "$1" >/dev/null; :' sh "$t"
expect_rc "CONTIG_STATS_FILE=pid.%p.json, two children" 0
n=$(ls "$TMPD" | grep -c '^pid\.[0-9]*\.json$')
[ "$n" -ge 2 ] || bad "CONTIG_STATS_FILE with %p: $n file(s) for two children, want 2 (and one for the shell if it exits through exit())"
for f in "$TMPD"/pid.*.json; do
	json_check "$f" "all(k in j for k in $keys)" || bad "CONTIG_STATS_FILE with %p: $f is wrong"
done

# a file that cannot be opened (no such directory) or written (/dev/full): one line says so, and
# the statistics go to stderr instead of being lost
for f in "$TMPD/no/such/dir/file.json" /dev/full; do
	[ "$f" = /dev/full ] && [ ! -w /dev/full ] && continue
	run CONTIG_STATS=json CONTIG_STATS_FILE="$f" "$t"
	expect_rc "CONTIG_STATS_FILE=$f t-stats" 0
	grep -q "^libcontig: CONTIG_STATS_FILE=\"$f\" could not be written (errno [0-9]*); the statistics go to stderr\$" "$TMPD/err" ||
		{ bad "CONTIG_STATS_FILE=$f: no line saying the file could not be written"; show; }
	sed -n '/^{/,$p' "$TMPD/err" | tail -1 >"$TMPD/fallback.json"
	json_check "$TMPD/fallback.json" "all(k in j for k in $keys)" ||
		bad "CONTIG_STATS_FILE=$f: the statistics did not reach stderr"
done
# The library's own writes into a pipe whose reader has gone (CONTIG_STATS at exit, a bad value's
# line, verbose logs): the program's own status, not death by SIGPIPE (141).
for envs in "CONTIG_STATS=1" "CONTIG_STATS=json" "CONTIG_MODE=bogus" "CONTIG_VERBOSE=1"; do
	( sleep 0.3; env $envs LD_PRELOAD="$LIBCONTIG" sh -c 'exec "$0" 0' "$t" >/dev/null; echo $? >"$TMPD/pipe-rc" ) 2>&1 | true
	prc=$(cat "$TMPD/pipe-rc")
	[ "$prc" = 0 ] || bad "$envs, stderr a pipe with no reader: exit status $prc, expected 0"
done
finish
