#!/bin/sh
# sqlite.sh - sqlite3 runs a scripted workload (tables, 20k rows, indexes, joins, GROUP BY, text
# functions) under the library; its output is identical to a run without the library.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

need_cmd sqlite3 sqlite3
sql=$TESTS_SRCDIR/preload/sqlite-workload.sql
for db in "$TMPD/plain.db" ":memory:"; do
	rm -f "$TMPD/plain.db" "$TMPD/pre.db"
	sqlite3 "$db" <"$sql" >"$TMPD/plain.out" 2>&1 || fail "sqlite3 $db without the library failed: $(tail -3 "$TMPD/plain.out")"
	pre=$db
	[ "$db" = ":memory:" ] || pre=$TMPD/pre.db
	# With CONTIG_STATS=1 the summary on stderr shows that the library was there and served.
	CONTIG_STATS=1 run_preloaded sqlite3 "$pre" <"$sql" >"$TMPD/pre.out" 2>"$TMPD/pre.err" ||
		fail "sqlite3 $db under the library failed (status $?): $(tail -3 "$TMPD/pre.err")"
	grep -v '^libcontig:' "$TMPD/pre.err" >>"$TMPD/pre.out"
	[ "${CONTIG_TEST_NO_PRELOAD:-0}" = 1 ] || grep -q '^libcontig:' "$TMPD/pre.err" ||
		fail "sqlite3 $db: no libcontig summary with CONTIG_STATS=1: was the library loaded?"
	if ! cmp -s "$TMPD/plain.out" "$TMPD/pre.out"; then
		diff "$TMPD/plain.out" "$TMPD/pre.out" | head -20
		fail "sqlite3 ($db) output differs under the library"
	fi
	echo "ok: sqlite3 $db: $(wc -l <"$TMPD/pre.out") lines of output identical"
done
