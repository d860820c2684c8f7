#!/bin/sh
# gcc.sh - gcc (driver, cc1, as, collect2, ld: LD_PRELOAD reaches them all) compiles and links a
# generated C file of several thousand lines under the library; the program prints the sum that
# was computed independently.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

need_cmd gcc gcc
N=300
src=$TMPD/gen.c
awk -v n=$N 'BEGIN {
	print "#include <stdio.h>\n#include <string.h>\n#include <stdlib.h>"
	print "struct pair { long a, b; const char *name; };"
	for (i = 0; i < n; i++) {
		printf "static long f%d(long x)\n{\n", i
		printf "\tstruct pair p = { x, %d, \"f%d\" };\n", i, i
		printf "\tlong a[4] = { p.a, p.b, %d %% 7, 0 };\n", i
		printf "\tchar buf[32];\n\tsnprintf(buf, sizeof buf, \"%%s\", p.name);\n"
		printf "\tif (strcmp(buf, \"f%d\") != 0)\n\t\tabort();\n", i
		printf "\tswitch (x %% 3) {\n\tcase 0:\n\t\ta[3] = a[0] * a[1];\n\t\tbreak;\n"
		printf "\tdefault:\n\t\tfor (int k = 0; k < a[0]; k++)\n\t\t\ta[3] += a[1];\n\t\tbreak;\n\t}\n"
		printf "\treturn a[3] + a[2];\n}\n\n"
	}
	printf "static long (*const table[%d])(long) = {\n", n
	for (i = 0; i < n; i++)
		printf "\tf%d,\n", i
	print "};\n\nint main(void)\n{\n\tlong sum = 0;\n"
	printf "\tfor (int i = 0; i < %d; i++)\n\t\tsum += table[i](3) + table[i](4);\n", n
	print "\tprintf(\"%ld\\n\", sum);\n\treturn 0;\n}"
}' >"$src"
# f_i(x) = x*i + i%7, summed for x = 3 and 4.
expected=$(awk -v n=$N 'BEGIN { s = 0; for (i = 0; i < n; i++) s += 7 * i + 2 * (i % 7); printf "%d\n", s }')
echo "generated $(wc -l <"$src") lines"
# CONTIG_STATS=1: each process the driver starts prints a summary naming the base, which shows
# that the library reached them all (gcc, cc1, as, collect2, ld).
CONTIG_STATS=1 run_preloaded gcc -O2 -Wall -o "$TMPD/gen" "$src" >"$TMPD/cc.log" 2>&1 ||
	fail "gcc under the library failed (status $?): $(grep -v '^libcontig:' "$TMPD/cc.log" | tail -5)"
if [ "${CONTIG_TEST_NO_PRELOAD:-0}" != 1 ]; then
	procs=$(grep -ci "^libcontig:.*$(hex "$(range_base)")" "$TMPD/cc.log")
	[ "$procs" -ge 3 ] || fail "only $procs process(es) of the gcc pipeline ran under the library"
	echo "$procs processes of the gcc pipeline ran under the library"
fi
got=$("$TMPD/gen") || fail "the compiled program failed"
[ "$got" = "$expected" ] || fail "the compiled program printed $got, expected $expected"
got=$(run_preloaded "$TMPD/gen") || fail "the compiled program failed under the library"
[ "$got" = "$expected" ] || fail "under the library the program printed $got, expected $expected"
echo "ok: compiled under the library, prints $got"
