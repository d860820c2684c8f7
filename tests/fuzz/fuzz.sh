#!/bin/sh
# fuzz.sh - the `make check` part of the fuzzing: replays every input in fuzz/regress/ (inputs
# that once found a bug, each in its own process, checked in full) and runs the plain driver on
# random inputs for FUZZ_CHECK_SECONDS (default 20) from seed FUZZ_SEED (default 1).
# Random runs step around the known bugs listed in FUZZ_AVOID (see fuzz-core.c); the regress
# inputs never do. Exit 0 pass, 1 fail, 77 skip.
: "${TESTS_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${TESTS_BUILDDIR:=$(pwd)}"
prog=$TESTS_BUILDDIR/fuzz/fuzz-core
[ -x "$prog" ] || { echo "FAIL: $prog not built"; exit 1; }
for v in $(env | sed -n 's/^\(CONTIG_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
ulimit -c 0 2>/dev/null || :
failures=0
for f in "$TESTS_SRCDIR"/fuzz/regress/*; do
	[ -f "$f" ] || continue
	FUZZ_AVOID= "$prog" "$f" >/dev/null 2>"$TESTS_BUILDDIR/fuzz/regress.err"
	rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "pass: regress/$(basename "$f")"
	else
		echo "FAIL: regress/$(basename "$f") (exit $rc$([ "$rc" -gt 128 ] && echo ", signal $((rc - 128))")):"
		sed 's/^/    /' "$TESTS_BUILDDIR/fuzz/regress.err" | head -5
		failures=$((failures + 1))
	fi
done
rm -f "$TESTS_BUILDDIR/fuzz/regress.err"
cd "$TESTS_BUILDDIR/fuzz" || exit 99
if ! FUZZ_AVOID=${FUZZ_AVOID-} \
	"$prog" -s "${FUZZ_SEED:-1}" -t "${FUZZ_CHECK_SECONDS:-20}"; then
	echo "FAIL: random inputs from seed ${FUZZ_SEED:-1} (the input is in $(pwd)/fuzz-crash-input)"
	failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] || exit 1
exit 0
