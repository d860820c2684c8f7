#!/bin/sh
# deepbind.sh - a library opened with RTLD_DEEPBIND (as PHP opens every extension) gets the
# library's malloc family, not glibc's: libcontig's dlopen drops the flag (preload/dlopen.c).
# t-deepbind opens a plugin by its bare name, found only through the program's DT_RUNPATH, so
# the caller dlopen sees must still be the program; then, when php is installed, php with its
# extensions (which crashes in glibc's free under every other preloaded allocator).
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

[ "$(uname -m)" = x86_64 ] || skip "dlopen is interposed on x86-64 only"
need_cmd gcc gcc
src=$TESTS_SRCDIR/preload
mkdir "$TMPD/plug"
gcc -O1 -shared -fPIC -o "$TMPD/plug/libcontig-test-plug.so" "$src/t-deepbind-plug.c" ||
	fail "cannot build the plugin"
# shellcheck disable=SC2016  # $ORIGIN is for the dynamic linker
gcc -O1 -fno-builtin -I"$src" -o "$TMPD/t-deepbind" "$src/t-deepbind.c" "$src/testutil.c" -ldl \
	-Wl,-rpath,'$ORIGIN/plug' -Wl,--enable-new-dtags || fail "cannot build t-deepbind"

for mode in plain deep; do
	out=$(run_env -- "$TMPD/t-deepbind" libcontig-test-plug.so $mode 2>&1)
	rc=$?
	[ $rc = 0 ] && [ "$out" = ok ] || { printf '%s\n' "$out"; fail "t-deepbind $mode: status $rc"; }
	note "ok: plugin opened by its RUNPATH ($mode): its blocks and the program's cross freely"
done

if command -v php >/dev/null 2>&1; then
	n=$(php -r 'echo count(get_loaded_extensions());' 2>/dev/null)
	out=$(run_env -- php -r '$a = []; for ($i = 0; $i < 50000; $i++) $a["k$i"] = str_repeat("x", $i % 50);
		echo count($a), " ", count(get_loaded_extensions()), "\n";' 2>&1)
	rc=$?
	[ $rc = 0 ] && [ "$out" = "50000 $n" ] || { printf '%s\n' "$out"; fail "php: status $rc"; }
	out=$(run_env CONTIG_VERBOSE=1 -- php -r 'echo 1;' 2>&1)
	if printf '%s\n' "$out" | grep -q 'RTLD_DEEPBIND dropped'; then
		note "ok: php with $n extensions (opened with RTLD_DEEPBIND) runs under the library"
	else
		note "ok: php runs under the library (it opened no extension with RTLD_DEEPBIND)"
	fi
else
	note "php not installed: its run is left out"
fi
