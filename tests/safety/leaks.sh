#!/bin/sh
# leaks.sh - SPEC "Leak checking", CONTIG_LEAKS and CONTIG_LEAKS_SUPPRESS: only unreachable blocks
# are leaks. A 50-byte block whose only pointer was dropped is reported in the SPEC format with
# its allocating function, and exits 23 under error (0 under report); a block held by a global
# or by a running thread is not a leak and gives no report; an unreachable block pointed to by
# another leaked one is an indirect leak; suppressions by function (with a wildcard) and by
# module, from a file of any length (bad lines named); contig_leak_check() returns what it finds and never exits; the program's own exit
# status and stdout (through a pipe) are unchanged; threads busy allocating at exit and exit()
# from a thread give no false leak; real programs run clean.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

t=$(prog t-leak)
sum() { grep -c "^libcontig: SUMMARY: $1 byte(s) leaked in $2 allocation(s)\.\$" "$TMPD/err"; }

# a direct leak
run CONTIG_LEAKS=error "$t" direct
expect_rc "CONTIG_LEAKS=error, direct leak" 23
grep -qx 'Direct leak of 50 byte(s) in 1 object(s) allocated from:' "$TMPD/err" ||
	{ bad "no 'Direct leak of 50 byte(s) in 1 object(s)' line"; show; }
[ "$(sum 50 1)" = 1 ] || bad "no SUMMARY of 50 bytes in 1 allocation"
[ "$(tail -1 "$TMPD/err")" = 'libcontig: SUMMARY: 50 byte(s) leaked in 1 allocation(s).' ] ||
	bad "the report does not end with the SUMMARY line"
sed -n '/^Direct leak of 50/,/^$/p' "$TMPD/err" | grep -q '^    #[0-9]* 0x[0-9a-f]* in make_direct' ||
	bad "the leak's stack does not name make_direct"
grep -qx 't-leak: direct done' "$TMPD/out" || bad "stdout lost under exit status 23"
run CONTIG_LEAKS=report "$t" direct 5
expect_rc "CONTIG_LEAKS=report, direct leak, own status 5" 5
[ "$(sum 50 1)" = 1 ] || bad "CONTIG_LEAKS=report: no SUMMARY"

# reachable to the end: no report, status unchanged
# (setstack: a thread whose stack is a static array in the bss, above globals holding blocks)
# (sparse: 8 GiB mapped, three pages written, one holding a block's only pointer: the check
# reads resident pages only, so it takes well under a second, where it took 20)
for m in global thread mapped setstack sparse clean; do
	run CONTIG_LEAKS=error "$t" $m 3
	expect_rc "CONTIG_LEAKS=error, $m, own status 3" 3
	[ ! -s "$TMPD/err" ] || { bad "$m: a report for a program with no leak"; show; }
	grep -qx "t-leak: $m done" "$TMPD/out" || bad "$m: stdout changed"
done

t0=$(date +%s)
run CONTIG_LEAKS=error "$t" sparse 3
t1=$(date +%s)
expect_rc "CONTIG_LEAKS=error, sparse 8 GiB mapping" 3
[ $((t1 - t0)) -le 8 ] || bad "the leak check of a sparse 8 GiB mapping took $((t1 - t0)) s (unwritten pages read?)"

# threads still running at exit are stopped for the scan (without that, blocks passing between
# them look leaked in flight); a thread that calls exit() while main holds a block
for i in 1 2 3; do
	run CONTIG_LEAKS=error "$t" busy
	expect_rc "busy threads at exit (run $i)" 0 || break
	[ ! -s "$TMPD/err" ] || { bad "busy threads at exit: a report"; show; break; }
done
# threads swapping page runs at exit: one stopped while it frees a run holds no pointer to it,
# which must not make it a leak (it did in 19 runs of 60)
for i in 1 2 3 4 5 6 7 8 9 10; do
	run CONTIG_LEAKS=error "$t" largeswap $((i * 4000))
	expect_rc "threads swapping page runs at exit (run $i)" 3 || { show; break; }
done
# detached threads ending as main returns: gone or going while the check lists them, they must
# not make it skip (it did in 3 of 10 runs)
for i in 1 2 3 4 5; do
	run CONTIG_LEAKS=error "$t" detached
	expect_rc "threads ending at exit (run $i)" 23 || { show; break; }
	[ "$(sum 50 1)" = 1 ] || { bad "threads ending at exit: no SUMMARY of 50 bytes in 1"; show; break; }
done
# every descriptor in use at exit: /proc/self/maps cannot be read; a line says the check was
# skipped, never a false leak of what a global holds (it was 5096 bytes in 11 allocations)
run CONTIG_LEAKS=error "$t" nofd 3
expect_rc "no free descriptor at exit, own status 3" 3
grep -q '^libcontig: leak check: skipped: /proc/self/maps cannot be read' "$TMPD/err" ||
	{ bad "no free descriptor: no 'skipped' line"; show; }
! grep -q 'SUMMARY\|leak of' "$TMPD/err" || { bad "no free descriptor: a leak reported"; show; }
# the report into a pipe whose reader has gone: the program's status, not SIGPIPE's 141
for m in error report; do
	want=23; [ $m = report ] && want=0
	( LD_PRELOAD="$LIBCONTIG" CONTIG_LEAKS=$m "$t" direct-late 2>&1 >/dev/null; echo $? >"$TMPD/rc" ) | true
	[ "$(cat "$TMPD/rc")" = $want ] || bad "CONTIG_LEAKS=$m, stderr into a closed pipe: status $(cat "$TMPD/rc"), not $want"
done
run CONTIG_LEAKS=error "$t" exiter
expect_rc "exit() from a thread" 0
grep -qx 't-leak: exiter done' "$TMPD/out" || bad "exit() from a thread: stdout lost"
[ ! -s "$TMPD/err" ] || { bad "exit() from a thread: a report"; show; }

# indirect
run CONTIG_LEAKS=error "$t" indirect
expect_rc "indirect" 23
grep -qx 'Direct leak of 24 byte(s) in 1 object(s) allocated from:' "$TMPD/err" || bad "indirect: no direct 24"
grep -qx 'Indirect leak of 40 byte(s) in 1 object(s) allocated from:' "$TMPD/err" || bad "indirect: no indirect 40"
[ "$(sum 64 2)" = 1 ] || { bad "indirect: no SUMMARY of 64 bytes in 2"; show 40; }
# largest first
first=$(grep -m1 'leak of' "$TMPD/err")
[ "$first" = 'Indirect leak of 40 byte(s) in 1 object(s) allocated from:' ] || bad "indirect: not largest first: $first"

# suppressions
printf '# test suppressions\n\nleak:suppressed_l*\n' >"$TMPD/supp"
run CONTIG_LEAKS=error CONTIG_LEAKS_SUPPRESS="$TMPD/supp" "$t" suppress
expect_rc "suppress by function" 23
[ "$(sum 50 1)" = 1 ] || { bad "suppress by function: SUMMARY is not 50 bytes in 1"; show 40; }
! grep -q 'leak of 77' "$TMPD/err" || bad "suppressed leak still reported"
grep -qx 'libcontig: suppressed: 77 byte(s) in 1 allocation(s) by 1 pattern(s)' "$TMPD/err" ||
	bad "no 'suppressed: 77 byte(s) in 1 allocation(s) by 1 pattern(s)' line"
printf 'leak:*/safety/t-le*\n' >"$TMPD/supp"
run CONTIG_LEAKS=error CONTIG_LEAKS_SUPPRESS="$TMPD/supp" "$t" suppress
expect_rc "suppress by module: every leak suppressed" 0
! grep -q 'SUMMARY\|leak of' "$TMPD/err" || bad "suppress by module: still reported"
grep -qx 'libcontig: suppressed: 127 byte(s) in 2 allocation(s) by 1 pattern(s)' "$TMPD/err" ||
	{ bad "suppress by module: no suppressed line"; show; }
# a big file: 20 KiB of comments, lines that are not patterns (named on stderr, not silently
# dropped), 300 patterns that match nothing, a 400-byte one, then the one that matches (only the
# first 16 KiB and 128 patterns were read, and a pattern over ~300 bytes never matched)
{ i=0; while [ $i -lt 2000 ]; do echo "# comment line $i"; i=$((i + 1)); done
  echo 'not a pattern'; echo 'leak:'
  i=0; while [ $i -lt 300 ]; do echo "leak:no_such_function_$i"; i=$((i + 1)); done
  printf 'leak:%0400d\n' 0
  echo 'leak:suppressed_l*'; } >"$TMPD/supp"
run CONTIG_LEAKS=error CONTIG_LEAKS_SUPPRESS="$TMPD/supp" "$t" suppress
expect_rc "suppress from a big file" 23
grep -qx 'libcontig: suppressed: 77 byte(s) in 1 allocation(s) by 1 pattern(s)' "$TMPD/err" ||
	{ bad "suppress from a big file: the last pattern was not used"; show 40; }
grep -q 'line 2001: not a "leak:PATTERN" line; ignored: "not a pattern"' "$TMPD/err" &&
	grep -q 'line 2002: not a "leak:PATTERN" line' "$TMPD/err" ||
	{ bad "suppress from a big file: bad lines not named"; show 40; }
printf 'leak:no_such_function\n' >"$TMPD/supp"
run CONTIG_LEAKS=error CONTIG_LEAKS_SUPPRESS="$TMPD/supp" "$t" suppress
expect_rc "a pattern that matches nothing" 23
[ "$(sum 127 2)" = 1 ] || bad "a pattern that matches nothing changed the SUMMARY"

# the API
run CONTIG_LEAKS=error "$t" api 4
expect_rc "contig_leak_check never exits" 4
grep -qx 'api: 0 0 / 30 3 / 0 0 0' "$TMPD/out" || { bad "contig_leak_check: $(cat "$TMPD/out"), expected 0 0 / 30 3 / 0 0 0"; show; }
[ "$(sum 30 3)" = 1 ] || bad "contig_leak_check: no report of its 30 bytes"
run "$t" api
grep -qx 'api: 0 0 / 0 0 / 0 0 -1' "$TMPD/out" || bad "contig_leak_check without CONTIG_LEAKS: $(cat "$TMPD/out")"

# stdout through a pipe, and nothing printed without CONTIG_LEAKS
out=$(timeout 60 env LD_PRELOAD="$LIBCONTIG" CONTIG_LEAKS=error "$t" direct 2>/dev/null | cat)
[ "$out" = 't-leak: direct done' ] || bad "stdout through a pipe: '$out'"
run "$t" direct
expect_rc "no CONTIG_LEAKS" 0
[ ! -s "$TMPD/err" ] || bad "without CONTIG_LEAKS stderr has: $(head -2 "$TMPD/err")"

# real programs: nothing to report, and the variable is inherited by children
real() {
	run CONTIG_LEAKS=error "$@"
	if [ "$rc" -ne 0 ] || grep -q 'leak of\|SUMMARY' "$TMPD/err"; then
		bad "CONTIG_LEAKS=error $*: status $rc"; show 12
	fi
}
real ls /
command -v python3 >/dev/null && real python3 -c pass
command -v sqlite3 >/dev/null && real sqlite3 :memory: 'select 1'
# perl frees its interpreter but not what that held unless asked to destruct fully: true leaks
command -v perl >/dev/null && real env PERL_DESTRUCT_LEVEL=2 perl -e 1
command -v git >/dev/null && real git --version
real sh -c 'ls / >/dev/null; if command -v python3 >/dev/null; then python3 -c pass; fi'
finish
