#!/bin/sh
# deepbind.sh - with libcontig-deepbind.so preloaded beside the library, a library opened with
# RTLD_DEEPBIND (as PHP opens every extension) gets the library's malloc family, not glibc's:
# its dlopen drops the flag (preload/deepbind.c). t-deepbind opens a plugin by its bare name,
# found only through the program's DT_RUNPATH, so the caller dlopen sees must still be the
# program; without the shim the deep case must die. Then, when php is installed, php with its
# extensions (which crashes in glibc's free under every preloaded allocator).
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

[ "$(uname -m)" = x86_64 ] || skip "dlopen is interposed on x86-64 only"
[ "${CONTIG_TEST_NO_PRELOAD:-0}" = 1 ] && fail "nothing to test without the library"
shim=${LIBCONTIG%/*}/libcontig-deepbind.so
[ -f "$shim" ] || fail "$shim not built"
need_cmd gcc gcc
src=$TESTS_SRCDIR/preload
mkdir "$TMPD/plug"
gcc -O1 -shared -fPIC -o "$TMPD/plug/libcontig-test-plug.so" "$src/t-deepbind-plug.c" ||
	fail "cannot build the plugin"
# shellcheck disable=SC2016  # $ORIGIN is for the dynamic linker
gcc -O1 -fno-builtin -I"$src" -o "$TMPD/t-deepbind" "$src/t-deepbind.c" "$src/testutil.c" -ldl \
	-Wl,-rpath,'$ORIGIN/plug' -Wl,--enable-new-dtags || fail "cannot build t-deepbind"

# without the shim: the plugin's blocks are glibc's, and glibc's free gets the program's
out=$(run_env -- "$TMPD/t-deepbind" libcontig-test-plug.so deep 2>&1)
[ $? = 0 ] && fail "t-deepbind deep passed without libcontig-deepbind.so: the test proves nothing"
note "ok: without libcontig-deepbind.so the deep case fails ($(printf '%s\n' "$out" | head -1))"

export LD_PRELOAD="$shim"      # run_preloaded puts the library first
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
