#!/bin/sh
# run.sh - `contig [options] -- COMMAND` runs COMMAND on the library: python3's objects lie in the
# range (also at a base given with --base), --stats prints the statistics, --leaks=error turns
# leaks into exit status 23, LD_PRELOAD keeps what was there, the command's status comes back.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/tools/common.sh"
find_python

probe='import ctypes
l = ctypes.CDLL(None)
l.contig_base.restype = ctypes.c_void_p
l.contig_size.restype = ctypes.c_size_t
objs = [object(), [1, 2, 3], "x" * 100000, bytearray(1 << 20)]
print(l.contig_base(), l.contig_size(), *[id(o) for o in objs])'

check_ids() {   # LABEL WANT_BASE WANT_SIZE
	read -r base size ids <"$TMPD/out" || { bad "$1: no output"; return; }
	[ "$base" -eq $(($2)) ] || bad "$1: contig_base() is $(printf %#x "$base"), want $2"
	[ "$size" -eq $(($3)) ] || bad "$1: contig_size() is $size, want $(($3))"
	for id in $ids; do
		if [ "$id" -lt "$base" ] || [ "$id" -ge $((base + size)) ]; then
			bad "$1: object at $(printf %#x "$id") outside [$(printf %#x "$base"), +$size)"
			return
		fi
	done
	ok "$1: python3's objects at $(for id in $ids; do printf '%#x ' "$id"; done)in the range"
}

if expect_status 0 "contig -- python3" contig -- "$PY" -c "$probe"; then
	check_ids "contig -- python3" 0xf800000000 $((64 << 30))
fi
if expect_status 0 "contig --base --size -- python3" contig --base 0x200000000000 --size=4G -- "$PY" -c "$probe"; then
	check_ids "--base 0x200000000000 --size=4G" 0x200000000000 $((4 << 30))
fi
# Without "--": the first operand is the command.
expect_status 0 "contig python3 (no --)" contig "$PY" -c "$probe" && check_ids "contig python3 (no --)" 0xf800000000 $((64 << 30))

# --stats: the summary on stderr; --stats=json: one JSON object.
if expect_status 0 "--stats -- true" contig --stats -- true; then
	for w in statistics range mode reserved committed live collisions; do
		grep -q "^libcontig: .*$w" "$TMPD/err" || bad "--stats: '$w' not in the summary"
	done
	grep -q 0xf800000000 "$TMPD/err" || bad "--stats: the base is not in the summary"
	ok "--stats prints the summary: $(grep -c '^libcontig:' "$TMPD/err") lines"
fi
if expect_status 0 "--stats=json --stats-file" contig --stats=json --stats-file "$TMPD/s.json" --mode lazy -- true; then
	"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["mode"] == "lazy", d; assert d["base"] == "0xf800000000", d' \
		"$TMPD/s.json" || bad "--stats=json --stats-file --mode lazy: $(cat "$TMPD/s.json")"
	ok "--stats=json --stats-file --mode lazy: $(head -c 80 "$TMPD/s.json")..."
fi

# --leaks: true has no leak (no report at all); python3 drops the only pointer to a block (ctypes
# returns it truncated to an int); python3 -c pass has none.
expect_status 0 "--leaks=error -- true" contig --leaks=error -- true &&
	{ ! grep -q 'SUMMARY\|leak of' "$TMPD/err" || bad "--leaks=error -- true: a report: $(cat "$TMPD/err")"; }
if expect_status 23 "--leaks=error -- python3" contig --leaks=error -- "$PY" -c 'import ctypes; ctypes.CDLL(None).malloc(12345)'; then
	grep -q '^libcontig: SUMMARY: 12345 byte(s) leaked in 1 allocation(s)' "$TMPD/err" || bad "--leaks=error -- python3: no SUMMARY"
	grep -qx 'Direct leak of 12345 byte(s) in 1 object(s) allocated from:' "$TMPD/err" ||
		bad "--leaks=error -- python3: the 12345-byte block is not listed"
	ok "--leaks=error: status 23 and the report: $(grep 'SUMMARY' "$TMPD/err")"
fi
expect_status 0 "--leaks -- python3" contig --leaks -- "$PY" -c 'import ctypes; ctypes.CDLL(None).malloc(12345)' &&
	{ grep -q 'SUMMARY' "$TMPD/err" || bad "--leaks (report): no leak report"; }
expect_status 0 "--leaks=error -- python3 -c pass" contig --leaks=error -- "$PY" -c pass &&
	{ ! grep -q 'SUMMARY' "$TMPD/err" || bad "--leaks=error -- python3 -c pass: a report"; }

# The command's exit status comes back; a missing command is 127.
expect_status 7 "exit status" contig -- sh -c 'exit 7' && ok "the command's exit status (7) is returned"
expect_status 127 "missing command" contig -- /nonexistent/command && ok "a missing command gives 127"

# LD_PRELOAD: the library first, libcontig-deepbind.so beside it, the caller's entries kept;
# the CONTIG_* variables are set.
out=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 contig --verbose --limit 64M --on-collision abort -- \
	sh -c 'echo "$LD_PRELOAD|$CONTIG_VERBOSE|$CONTIG_LIMIT|$CONTIG_ON_COLLISION"' 2>/dev/null)
case $out in
"$LIBCONTIG:${LIBCONTIG%/*}/libcontig-deepbind.so:/lib/x86_64-linux-gnu/libc.so.6|1|64M|abort") ok "environment: $out" ;;
*) bad "environment under contig: '$out'" ;;
esac

# --leaks-suppress: the file is passed on, and leak reporting is turned on unless asked otherwise.
out=$(contig --leaks-suppress "$TMPD/s.supp" -- sh -c 'echo "$CONTIG_LEAKS_SUPPRESS|$CONTIG_LEAKS"' 2>/dev/null)
[ "$out" = "$TMPD/s.supp|report" ] && ok "--leaks-suppress: $out" || bad "--leaks-suppress: '$out'"
out=$(contig --leaks=error --leaks-suppress "$TMPD/s.supp" -- sh -c 'echo "$CONTIG_LEAKS_SUPPRESS|$CONTIG_LEAKS"' 2>/dev/null)
[ "$out" = "$TMPD/s.supp|error" ] || bad "--leaks=error --leaks-suppress: '$out'"

finish
