#!/bin/sh
# symbols.sh - the library exports exactly the symbols of expected-symbols.txt (SPEC.md: the
# malloc family, glibc's __libc_* entry points, the mapping calls and the contig_* API; and
# dlopen, which drops RTLD_DEEPBIND).
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

[ "${CONTIG_TEST_NO_PRELOAD:-0}" = 1 ] && skip "no library to inspect"
NM=${NM:-nm}    # may carry options (libtool's "nm -B"): used unquoted
command -v ${NM%% *} >/dev/null 2>&1 || need_cmd nm binutils
# Type A entries are version nodes (LIBCONTIG_1), not symbols.
$NM -D --defined-only "$LIBCONTIG" >"$TMPD/nm" || fail "$NM -D $LIBCONTIG failed"
awk '$2 != "A" { print $3 }' "$TMPD/nm" | sed 's/@.*//' | LC_ALL=C sort -u >"$TMPD/actual"
# dlopen is interposed on x86-64 only (preload/dlopen.c)
if [ "$(uname -m)" = x86_64 ]; then cat "$TESTS_SRCDIR/preload/expected-symbols.txt"
else grep -v '^dlopen$' "$TESTS_SRCDIR/preload/expected-symbols.txt"; fi | LC_ALL=C sort -u >"$TMPD/expected"
if ! cmp -s "$TMPD/expected" "$TMPD/actual"; then
	echo "exported symbols differ from expected-symbols.txt (- missing, + unexpected):"
	diff "$TMPD/expected" "$TMPD/actual" | sed -n 's/^< /- /p; s/^> /+ /p'
	fail "exported symbol set is wrong"
fi
echo "ok: $(wc -l <"$TMPD/actual") symbols, as expected"
