#!/bin/sh
# map.sh - `contig map -- COMMAND` and `contig map PID` print the range's bounds and its mappings
# classified (usable, reserved, served, foreign, unmapped) with totals, foreign mappings marked,
# and the library's own page map; -o writes a valid, non-trivial PNG (test_contig.py checks the
# page map's contents).
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/tools/common.sh"
find_python

if expect_status 0 "map -- sleep 0.3" contig map -- sleep 0.3; then
	grep -q "^range 0xf800000000-0x10800000000 (64.0 GiB)" "$TMPD/out" || bad "map: no range line"
	grep -q " usable .*rw-p" "$TMPD/out" || bad "map: no usable (rw-p) part"
	grep -q " reserved .*---p" "$TMPD/out" || bad "map: no reserved (---p) part"
	grep -q "^totals" "$TMPD/out" || bad "map: no totals"
	for c in usable reserved served foreign unmapped; do
		grep -q "^  $c " "$TMPD/out" || bad "map: no total for $c"
	done
	ok "map -- sleep 0.3"
	sed 's/^/    /' "$TMPD/out"
fi

# Lazy mode: the part not grown into yet is unmapped.
if expect_status 0 "map --mode lazy -- sleep 0.2" contig map --mode lazy -- sleep 0.2; then
	grep -q " unmapped " "$TMPD/out" || bad "map --mode lazy: no unmapped gap"
	grep -q "mode lazy" "$TMPD/out" || bad "map --mode lazy: the library's mode not reported"
fi

# The library's own view, from its dump at exit (CONTIG_MAP_FILE): kinds and size classes.
if expect_status 0 "map --text -- sleep 0.2" contig map --text -- sleep 0.2; then
	grep -q "^the library's view: its page map (CONTIG_MAP_FILE" "$TMPD/out" || bad "map: no library view"
	grep -q "^  small  *[1-9]" "$TMPD/out" || bad "map: no small runs in the library's view"
	grep -q "^  small runs by size class" "$TMPD/out" || bad "map: no size classes"
	grep -q "^timeline: " "$TMPD/out" || bad "map: no timeline"
fi

# A command that execs the real program (a shell script, a pyenv shim): the samples follow the
# new image's page map, not the shell's, whose memory is gone once it has exec'd (the last row,
# the library's own counts at exit, has no resident figure and is not a sample).
if expect_status 0 "map --text -- sh -c 'sleep; exec python'" contig map --text -- sh -c \
	"sleep 0.3; exec \"$PY\" -c 'import time; x = [bytes(1000) for _ in range(60000)]; time.sleep(0.5)'"; then
	peak=$(awk '/^timeline: / { t = 1; next } t && $3 == "MiB" && $4 != "-" && $2 > m { m = $2 } END { print int(m) }' "$TMPD/out")
	if [ "${peak:-0}" -ge 40 ]; then
		ok "map of a command that execs: committed reached $peak MiB in the samples"
	else
		bad "map of a command that execs: the samples' committed peak is ${peak:-0} MiB, not the program's 60 MiB: $(sed -n '/^timeline/,$p' "$TMPD/out" | head -12)"
	fi
fi

# A command that forks the program instead (a shell that runs it and goes on): the map is of the
# command's own process, says so, and names the largest heap among the children's own page maps.
# The shell leaves by _exit, with no dump of its own: its last sampled page map stands in.
if expect_status 0 "map --text -- sh -c 'python; true'" contig map --text -- sh -c \
	"\"$PY\" -c 'x = [bytes(1000) for _ in range(60000)]'; true"; then
	if grep -q "^(it forked 1 process(es) under the library; this map is of pid [0-9]*, the command itself; the largest child heap, pid [0-9]*'s, peaked at [0-9.]* MiB committed" "$TMPD/out"; then
		ok "map of a command that forks: the child's heap is named"
	else
		bad "map of a command that forks: no line naming the child's heap: $(head -4 "$TMPD/out")"
	fi
	grep -q "^the library's view: its page map (the beacon in /proc/" "$TMPD/out" ||
		bad "map of a command that forks: the shell's last sampled page map is not shown"
fi

# A short run with a picture (matplotlib): a PNG with valid chunks, and not a trivial one.
if ! "$PY" -c 'import matplotlib' 2>/dev/null; then
	echo "SKIP: the picture: python3-matplotlib is not installed"
elif expect_status 0 "map -o m.png" contig map -o "$TMPD/m.png" -- sleep 0.2; then
	"$PY" - "$TMPD/m.png" <<'PY' || bad "-o m.png: not a valid PNG"
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n", "magic"
pos, chunks = 8, []
while pos < len(d):
    n, = struct.unpack(">I", d[pos:pos + 4]); kind = d[pos + 4:pos + 8]; body = d[pos + 8:pos + 8 + n]
    crc, = struct.unpack(">I", d[pos + 8 + n:pos + 12 + n])
    assert zlib.crc32(kind + body) & 0xffffffff == crc, "crc of %r" % kind
    chunks.append((kind, body)); pos += 12 + n
assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND", [c[0] for c in chunks]
w, h = struct.unpack(">II", chunks[0][1][:8])
assert w >= 1000 and h >= 800, (w, h)
assert len(d) > 40000, "a %d-byte picture has nothing in it" % len(d)
print("ok: -o m.png: %dx%d PNG, %d bytes" % (w, h, len(d)))
PY
fi

# A picture that cannot be written: one line and status 1, not a traceback.
if "$PY" -c 'import matplotlib' 2>/dev/null &&
   expect_status 1 "map -o into a missing directory" contig map -o "$TMPD/no/such/dir/m.png" -- true; then
	if grep -q Traceback "$TMPD/err" || ! grep -q "cannot write the picture" "$TMPD/err"; then
		bad "map -o into a missing directory: $(head -3 "$TMPD/err")"
	else
		echo "ok: map -o into a missing directory: $(head -1 "$TMPD/err")"
	fi
fi

# map PID: a process started under the launcher (which replaces itself by the command, so $! is
# sleep's pid); a range over its stack shows a FOREIGN mapping.
CONTIG_LIB=$LIBCONTIG "$PY" "$CONTIG" -- sleep 5 >/dev/null 2>&1 &
spid=$!
i=0
until grep -q libcontig "/proc/$spid/maps" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 250 ] || break
	sleep 0.02
done
if [ -n "$spid" ] && expect_status 0 "map PID" contig map "$spid"; then
	grep -q "^pid $spid (sleep)" "$TMPD/out" || bad "map PID: no title for pid $spid: $(head -1 "$TMPD/out")"
	grep -q " reserved .*---p" "$TMPD/out" || bad "map PID: no reserved part"
	grep -q "not loaded" "$TMPD/out" && bad "map PID: says libcontig is not loaded"
	grep -q "^the library's view: its page map (the beacon in /proc/$spid/mem)" "$TMPD/out" ||
		bad "map PID: the library's page map was not read through its beacon"
	stack=$(awk '/\[stack\]/ { split($1, a, "-"); print a[1]; exit }' "/proc/$spid/maps")
	if [ -n "$stack" ] && expect_status 0 "map --base (stack) PID" contig map --base "0x$stack" --size 1G "$spid"; then
		grep -q '^!! FOREIGN .*\[stack\]' "$TMPD/out" || bad "map over the stack: [stack] not marked FOREIGN: $(cat "$TMPD/out")"
		grep -q '^!! 1 foreign' "$TMPD/out" || bad "map over the stack: foreign total not flagged"
		ok "map PID: the stack in the range is marked FOREIGN"
	fi
else
	bad "no sleep process to map"
fi
kill "$spid" 2>/dev/null
wait 2>/dev/null

# map PID of a process that preloads a copy of the library under another name: its LD_PRELOAD
# says which mapping is the library, and the beacon is read.
cp "$LIBCONTIG" "$TMPD/liballoc-copy.so"
LD_PRELOAD="$TMPD/liballoc-copy.so" sleep 5 >/dev/null 2>&1 &
cpid=$!
i=0
until grep -q liballoc-copy "/proc/$cpid/maps" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 250 ] || break
	sleep 0.02
done
if expect_status 0 "map PID (a renamed copy)" contig map "$cpid"; then
	if grep -q "not loaded" "$TMPD/out" ||
	   ! grep -q "^the library's view: its page map (the beacon in /proc/$cpid/mem)" "$TMPD/out"; then
		bad "map PID of a renamed copy: the library was not found: $(grep -i 'loaded\|view' "$TMPD/out" | head -2)"
	else
		ok "map PID of a renamed copy: its page map was read"
	fi
fi
kill "$cpid" 2>/dev/null
wait 2>/dev/null

# A process that does not exist.
expect_status 1 "map of a missing pid" contig map 999999999 && ok "map of a missing pid: status 1"

finish
