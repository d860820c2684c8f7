#!/bin/sh
# symbols.sh - the library exports exactly the symbols of expected-symbols.txt (SPEC.md: the
# malloc family, glibc's __libc_* entry points, the mapping calls and the contig_* API), and
# libcontig-deepbind.so beside it only dlopen.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

[ "${CONTIG_TEST_NO_PRELOAD:-0}" = 1 ] && skip "no library to inspect"
NM=${NM:-nm}    # may carry options (libtool's "nm -B"): used unquoted
command -v ${NM%% *} >/dev/null 2>&1 || need_cmd nm binutils
# Type A entries are version nodes (LIBCONTIG_1), not symbols.
$NM -D --defined-only "$LIBCONTIG" >"$TMPD/nm" || fail "$NM -D $LIBCONTIG failed"
awk '$2 != "A" { print $3 }' "$TMPD/nm" | sed 's/@.*//' | LC_ALL=C sort -u >"$TMPD/actual"
LC_ALL=C sort -u "$TESTS_SRCDIR/preload/expected-symbols.txt" >"$TMPD/expected"
if ! cmp -s "$TMPD/expected" "$TMPD/actual"; then
	echo "exported symbols differ from expected-symbols.txt (- missing, + unexpected):"
	diff "$TMPD/expected" "$TMPD/actual" | sed -n 's/^< /- /p; s/^> /+ /p'
	fail "exported symbol set is wrong"
fi
echo "ok: $(wc -l <"$TMPD/actual") symbols, as expected"

# libcontig-deepbind.so, beside it: dlopen alone on x86-64, nothing elsewhere.
shim=${LIBCONTIG%/*}/libcontig-deepbind.so
[ -f "$shim" ] || fail "$shim not built"
$NM -D --defined-only "$shim" | awk '$2 != "A" { print $3 }' | sed 's/@.*//' | LC_ALL=C sort -u >"$TMPD/shim"
want=dlopen
[ "$(uname -m)" = x86_64 ] || want=
[ "$(cat "$TMPD/shim")" = "$want" ] || { cat "$TMPD/shim"; fail "libcontig-deepbind.so exports the wrong set"; }
echo "ok: libcontig-deepbind.so exports ${want:-nothing}"
