#!/bin/sh
# misuse.sh - double frees, interior and never-allocated frees, realloc of a freed block: each
# must print "libcontig: free(): invalid pointer 0x…" (realloc(): for realloc) naming the pointer
# and die of SIGABRT. Harmless look-alikes (free(NULL), foreign pointers) must not crash.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

p=$(prog t-misuse)
[ -x "$p" ] || fail "$p not built"
failures=0

bad() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

expect_abort() {   # CASE FUNC
	run_preloaded "$p" "$1" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	ptr=$(sed -n 's/^ptr //p' "$TMPD/out" | head -1)
	msg=$(grep "invalid pointer" "$TMPD/err" | head -1)
	if [ $rc -ne 134 ]; then
		bad "$1: exit status $rc, expected death by SIGABRT (134); stderr: $(head -3 "$TMPD/err")"
		return
	fi
	case $msg in
	"libcontig: $2(): invalid pointer 0x"*) ;;
	*) bad "$1: stderr lacks 'libcontig: $2(): invalid pointer 0x…'; it has: $(head -3 "$TMPD/err")"
	   return ;;
	esac
	shown=${msg#"libcontig: $2(): invalid pointer "}
	shown=${shown%%[!0-9a-fA-Fx]*}
	if [ -n "$ptr" ] && [ $((shown)) -ne $((ptr)) ]; then
		bad "$1: the message names $shown, the pointer was $ptr"
		return
	fi
	echo "ok: $1 aborted: $msg"
}

expect_corrupt() {   # CASE: malloc must refuse a corrupted free-list link, naming its target
	run_preloaded "$p" "$1" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	ptr=$(sed -n 's/^ptr //p' "$TMPD/out" | head -1)
	msg=$(grep "heap corruption" "$TMPD/err" | head -1)
	if [ $rc -ne 134 ]; then
		bad "$1: exit status $rc, expected death by SIGABRT (134); stderr: $(head -3 "$TMPD/err")"
		return
	fi
	case $msg in
	"libcontig: malloc(): heap corruption at 0x"*) ;;
	*) bad "$1: stderr lacks 'libcontig: malloc(): heap corruption at 0x…'; it has: $(head -3 "$TMPD/err")"
	   return ;;
	esac
	shown=${msg#"libcontig: malloc(): heap corruption at "}
	shown=${shown%%[!0-9a-fA-Fx]*}
	if [ -n "$ptr" ] && [ $((shown)) -ne $((ptr)) ]; then
		bad "$1: the message names $shown, the link pointed at $ptr"
		return
	fi
	echo "ok: $1 aborted: $msg"
}

expect_survive() {   # CASE
	run_preloaded "$p" "$1" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	if [ $rc -ne 0 ]; then
		bad "$1: exit status $rc, expected 0; stderr: $(head -3 "$TMPD/err")"
		return
	fi
	if grep -q "invalid pointer" "$TMPD/err"; then
		bad "$1: survived but reported an invalid pointer: $(head -3 "$TMPD/err")"
		return
	fi
	echo "ok: $1 survived"
}

for c in double-free-small double-free-medium double-free-large double-free-large-reused \
         double-free-onepage-aligned double-free-aligned \
         interior-small interior-large interior-misaligned never-handed-out; do
	expect_abort $c free
done
for c in realloc-freed realloc-freed-inplace realloc-interior realloc-freed-large realloc-remote-freed; do
	expect_abort $c realloc
done
for c in double-free-mmap double-free-remote double-free-remote-then-owner double-free-remote-chained \
         double-free-remote-cycle carved-free-remote free-after-purge; do
	expect_abort $c free
done
# free_sized with a size larger than the block: a libcontig message and SIGABRT
run_preloaded "$p" free-sized-wrong >"$TMPD/out" 2>"$TMPD/err"
rc=$?
if [ $rc -eq 134 ] && grep -q "^libcontig: free_sized(): " "$TMPD/err"; then
	echo "ok: free-sized-wrong aborted: $(grep '^libcontig:' "$TMPD/err" | head -1)"
else
	bad "free-sized-wrong: exit status $rc, stderr: $(head -3 "$TMPD/err")"
fi
for c in corrupt-live corrupt-interior corrupt-misaligned corrupt-other-page corrupt-outside \
         corrupt-beyond corrupt-index-live corrupt-index-beyond; do
	expect_corrupt $c
done
# a remote free, a use-after-free write over the block, the owner's free: caught at the owner's
# free or when it collects the remote free, but never two mallocs of one block
# (restored: a second use-after-free write puts back the other thread's tag, computed as a program
# that knew a fixed key would; the key is drawn at start)
# (tag-wiped: the owner's free, a use-after-free write over the block's second word, another
# thread's free: caught when the owner collects that free)
for c in double-free-remote-wiped-then-owner double-free-remote-wiped-restored \
         double-free-remote-tag-wiped; do
	run_preloaded "$p" $c >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	if [ $rc -eq 134 ] && ! grep -q 'handed out twice' "$TMPD/out" &&
	   grep -Eq '^libcontig: (free\(\): invalid pointer|malloc\(\): heap corruption at) ' "$TMPD/err"; then
		echo "ok: $c aborted: $(grep '^libcontig:' "$TMPD/err" | head -1)"
	else
		bad "$c: exit status $rc, stdout: $(head -2 "$TMPD/out"), stderr: $(head -3 "$TMPD/err")"
	fi
done
# the owner and another thread free one block at once, 300 times: aborts are right, one block
# from two mallocs never (before the fix: 5 to 7 children in 100)
run_preloaded "$p" double-free-race 300 >"$TMPD/out" 2>"$TMPD/err"
rc=$?
if [ $rc -eq 0 ] && ! grep -q 'handed out twice' "$TMPD/out"; then
	echo "ok: $(grep "^double-free-race:" "$TMPD/out")"
else
	bad "double-free-race: exit status $rc: $(head -2 "$TMPD/out")"
fi
for c in free-null free-foreign-mmap free-static realloc-foreign corrupt-remote; do
	expect_survive $c
done
[ $failures -eq 0 ] || fail "$failures misuse case(s) wrong"
