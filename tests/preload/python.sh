#!/bin/sh
# python.sh - python3 runs under the library and the id() (address) of every object it creates
# lies in the range: with PYTHONMALLOC=malloc (every object from malloc) always, and with
# python's own pymalloc arenas (which come from mmap) when the library serves mmap.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

need_cmd python3 python3
# The system interpreter, not a wrapper script (pyenv shims and the like) when there is one.
py=$(command -v python3)
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
lo=$(range_base)
hi=$(range_end)

check_ids() {   # LABEL: ids in $TMPD/ids
	n=$(wc -l <"$TMPD/ids")
	[ "$n" -gt 80000 ] || fail "$1: only $n ids printed"
	# Addresses are below 2^47: exact in awk's doubles.
	awk -v lo="$lo" -v hi="$hi" '($1 + 0 < lo + 0) || ($1 + 0 >= hi + 0)' "$TMPD/ids" >"$TMPD/outside"
	bad=$(wc -l <"$TMPD/outside")
	[ "$bad" -eq 0 ] || fail "$1: $bad of $n ids outside [$(hex "$lo"), $(hex "$hi")), e.g. $(for a in $(head -3 "$TMPD/outside"); do printf "%s " "$(hex "$a")"; done)"
	echo "ok: $1: all $n ids in [$(hex "$lo"), $(hex "$hi"))"
}

PYTHONMALLOC=malloc run_preloaded "$py" "$TESTS_SRCDIR/preload/python-objects.py" >"$TMPD/ids" 2>"$TMPD/err" ||
	fail "python3 (PYTHONMALLOC=malloc) failed: $(tail -5 "$TMPD/err")"
check_ids "PYTHONMALLOC=malloc"

# pymalloc takes its arenas from mmap(): in range only once the library serves mmap.
if [ "${CONTIG_TEST_NO_PRELOAD:-0}" != 1 ] &&
   ! { ${NM:-nm} -D --defined-only "$LIBCONTIG" 2>/dev/null | grep -q ' T mmap'; }; then
	echo "note: the library does not interpose mmap yet: pymalloc run not checked"
	exit 0
fi
run_preloaded "$py" "$TESTS_SRCDIR/preload/python-objects.py" >"$TMPD/ids" 2>"$TMPD/err" ||
	fail "python3 failed: $(tail -5 "$TMPD/err")"
check_ids "pymalloc"
