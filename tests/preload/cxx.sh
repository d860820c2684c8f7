#!/bin/sh
# cxx.sh - C++ containers, exceptions, over-aligned, sized and nothrow new in range; operator
# new served by the library with the new_handler loop intact; a sized delete with a size larger
# than the block aborts with a libcontig message, and a second sized delete of a small or a large
# block says free(): invalid pointer, as free does.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

if [ "${CONTIG_TEST_NO_PRELOAD:-0}" != 1 ]; then
	run_preloaded "$(prog t-cxx)" delete-wrong-size >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	if [ $rc -ne 134 ] || ! grep -q "^libcontig: operator delete(): size larger than the block" "$TMPD/err"; then
		fail "delete-wrong-size: exit status $rc (expected 134), stderr: $(head -3 "$TMPD/err")"
	fi
	echo "ok: delete-wrong-size aborted: $(grep '^libcontig:' "$TMPD/err" | head -1)"
	run_preloaded "$(prog t-cxx)" delete-wrong-size-large >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	if [ $rc -ne 134 ] || ! grep -q "^libcontig: operator delete(): size larger than the block" "$TMPD/err"; then
		fail "delete-wrong-size-large: exit status $rc (expected 134), stderr: $(head -3 "$TMPD/err")"
	fi
	echo "ok: delete-wrong-size-large aborted: $(grep '^libcontig:' "$TMPD/err" | head -1)"
	run_preloaded "$(prog t-cxx)" double-delete-small >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	if [ $rc -ne 134 ] || ! grep -q "^libcontig: free(): invalid pointer 0x" "$TMPD/err"; then
		fail "double-delete-small: exit status $rc (expected 134, 'free(): invalid pointer'), stderr: $(head -3 "$TMPD/err")"
	fi
	echo "ok: double-delete-small aborted: $(grep '^libcontig:' "$TMPD/err" | head -1)"
	run_preloaded "$(prog t-cxx)" double-delete-large >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	if [ $rc -ne 134 ] || ! grep -q "^libcontig: free(): invalid pointer 0x" "$TMPD/err"; then
		fail "double-delete-large: exit status $rc (expected 134, 'free(): invalid pointer'), stderr: $(head -3 "$TMPD/err")"
	fi
	echo "ok: double-delete-large aborted: $(grep '^libcontig:' "$TMPD/err" | head -1)"
fi
run_helper t-cxx
