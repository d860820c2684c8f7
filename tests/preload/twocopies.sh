#!/bin/sh
# twocopies.sh - two copies of the library in one process (one preloaded from the build tree and
# one installed, both in LD_PRELOAD; the launcher adds its own in front of what is there): the
# program's malloc is the first copy's, and the other must not reserve the range under it. It
# did when its constructor ran first: the first copy found the range taken, and every malloc
# failed (shells died, python could not start). Both orders; the heap must lie in the range.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

p=$(prog t-basic)
[ -x "$p" ] || fail "$p not built"
[ "${CONTIG_TEST_NO_PRELOAD:-0}" = 1 ] && { echo "SKIP: needs the library"; exit 77; }
copy=$TMPD/libcontig-copy.so
cp "$LIBCONTIG" "$copy" || fail "cannot copy $LIBCONTIG"
dbase=$(to_bytes $DEFAULT_BASE)
dend=$((dbase + $(to_bytes $DEFAULT_SIZE)))
failures=0
for order in "$copy:$LIBCONTIG" "$LIBCONTIG:$copy"; do
	timeout -k 5 "$CONTIG_TEST_TIMEOUT" env LD_PRELOAD="$order" "$p" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL: LD_PRELOAD=$order: t-basic exit status $rc: $(head -3 "$TMPD/err")"
		failures=$((failures + 1))
		continue
	fi
	while read -r a; do
		v=$((a))
		if [ "$v" -lt "$dbase" ] || [ "$v" -ge "$dend" ]; then
			echo "FAIL: LD_PRELOAD=$order: block $a outside the range"
			failures=$((failures + 1))
			break
		fi
	done <"$TMPD/out"
	out=$(timeout -k 5 "$CONTIG_TEST_TIMEOUT" env LD_PRELOAD="$order" sh -c 'echo hello' 2>&1)
	[ "$out" = hello ] || { echo "FAIL: LD_PRELOAD=$order: sh -c 'echo hello' gave: $out"; failures=$((failures + 1)); }
	[ $failures -eq 0 ] && echo "ok: LD_PRELOAD=$order"
done
[ $failures -eq 0 ] || exit 1
exit 0
