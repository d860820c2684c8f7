#!/bin/sh
# corpus.sh - the seeded leak corpus (tests/leaks/*.c, *.cc): every program states its truth in
# its header comment, and this runner checks the leak report against it exactly:
#   EXPECT: direct=BYTES/OBJECTS indirect=BYTES/OBJECTS   what truly leaks (bytes as asked)
#   STACK: f0 f1 ...    some leak group's frames #0, #1, ... name these functions (one per line)
#   BUILD: flags        how to compile it (-O0 with frame pointers, or -O2 without: CFI unwinding)
# Each runs under LD_PRELOAD=$LIBCONTIG CONTIG_LEAKS=error: the Direct/Indirect totals, the
# SUMMARY line (absent when clean), the exit status (23 iff something leaks, else the program's
# own 0), the stdout (the same as without the library) and the stacks must all be right.
#   CORPUS_TOOL=lsan   the same checks against LeakSanitizer (liblsan.so.0), for docs/leaks.md
#                      (CORPUS_LSAN_OPTIONS=fast_unwind_on_malloc=0: its DWARF unwinder)
#   CORPUS_ONLY="a b"  run only these cases;  CORPUS_RESULTS=FILE  one line per case for compare.sh
# Real programs under CONTIG_LEAKS (clean, same stdout) are tests/safety/leaks.sh's side: the
# scan engineer owns it; realprog.sh here covers a few until that lands.
set -u
: "${TESTS_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${LIBCONTIG:=$TESTS_SRCDIR/../build/preload/.libs/libcontig.so}"
: "${CC:=cc}"
: "${CXX:=c++}"
: "${CORPUS_TOOL:=contig}"
: "${CORPUS_TIMEOUT:=120}"
: "${CORPUS_ONLY:=}"
: "${CORPUS_RESULTS:=/dev/null}"
src=$TESTS_SRCDIR/leaks

# Cases known to fail, with the reason (an XPASS fails the run, so fixed ones get taken off).
xfail=""

for v in $(env | sed -n 's/^\(CONTIG_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset LSAN_OPTIONS ASAN_OPTIONS
ulimit -c 0 2>/dev/null || :

case $CORPUS_TOOL in
contig) [ -f "$LIBCONTIG" ] || { echo "FAIL: $LIBCONTIG not built"; exit 1; }
	preload=$LIBCONTIG; toolenv="CONTIG_LEAKS=error" ;;
lsan)	preload=$(for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
		[ -f "$d/liblsan.so.0" ] && echo "$d/liblsan.so.0" && break; done)
	[ -n "$preload" ] || { echo "SKIP: liblsan.so.0 not installed"; exit 77; }
	toolenv="LSAN_OPTIONS=exitcode=23:detect_leaks=1${CORPUS_LSAN_OPTIONS:+:$CORPUS_LSAN_OPTIONS}" ;;
*)	echo "FAIL: CORPUS_TOOL=$CORPUS_TOOL (contig or lsan)"; exit 1 ;;
esac

TMPD=$(mktemp -d "${TMPDIR:-/tmp}/contig-corpus.XXXXXX") || exit 99
trap 'rm -rf "$TMPD"' EXIT

# field FILE KEY: the text after "KEY:" in FILE's header comment (every such line, one a line)
field() { sed -n "s/^[ /*]*$2: *//p" "$1"; }

# The report as lines "KIND BYTES OBJECTS f0 f1 f2 ..." (function names, arguments cut), one per
# group. Under LSan the allocator's own frames (malloc, operator new) come first: dropped.
groups() {
	awk -v tool="$CORPUS_TOOL" '
	function flush() { if (kind != "") print kind, bytes, objs, frames; kind = "" }
	/(Direct|Indirect) leak of [0-9]+ byte\(s\) in [0-9]+ object\(s\)/ {
		flush()
		for (i = 1; i <= NF; i++) {
			if ($i == "Direct" || $i == "Indirect") kind = $i
			if ($i == "of") bytes = $(i + 1)
			if ($i == "in") objs = $(i + 1)
		}
		frames = ""; skipping = (tool == "lsan"); next
	}
	kind != "" && $1 ~ /^#[0-9]+$/ {
		name = "?"
		for (i = 3; i < NF; i++) if ($i == "in") { name = $(i + 1); break }
		sub(/\(.*/, "", name); sub(/\..*/, "", name)
		if (skipping && name ~ /^(__interceptor_.*|malloc|calloc|realloc|aligned_alloc|posix_memalign|memalign|valloc|operator)$/) next
		skipping = 0
		frames = frames " " name; next
	}
	kind != "" && $1 !~ /^#/ { flush() }
	END { flush() }'
}

# sum KIND: "BYTES/OBJECTS" over the groups of that kind
sum() { awk -v k="$1" '$1 == k { b += $2; n += $3 } END { printf "%d/%d\n", b, n }' "$TMPD/groups"; }

fails=0; passes=0; xfails=0
for f in "$src"/*.c "$src"/*.cc; do
	name=$(basename "$f"); name=${name%.*}
	if [ -n "$CORPUS_ONLY" ]; then case " $CORPUS_ONLY " in *" $name "*) ;; *) continue ;; esac; fi
	expect=$(field "$f" EXPECT)
	[ -n "$expect" ] || continue
	want_d=$(echo "$expect" | sed -n 's/^direct=\([0-9]*\/[0-9]*\) .*/\1/p')
	want_i=$(echo "$expect" | sed -n 's/.* indirect=\([0-9]*\/[0-9]*\).*/\1/p')
	flags=$(field "$f" BUILD)
	case $f in *.cc) comp=$CXX ;; *) comp=$CC ;; esac
	exe=$TMPD/$name
	# shellcheck disable=SC2086
	if ! $comp $flags -pthread -I"$src" -o "$exe" "$f" 2>"$TMPD/cc.err"; then
		echo "FAIL $name: does not compile ($comp $flags)"; sed 's/^/  /' "$TMPD/cc.err" | head -5
		fails=$((fails + 1)); continue
	fi
	why=""
	timeout -k 5 "$CORPUS_TIMEOUT" "$exe" >"$TMPD/plain.out" 2>/dev/null
	prc=$?
	[ "$prc" -eq 0 ] || why="$why; exits $prc without the tool"
	t0=$(date +%s.%N)
	timeout -k 5 "$CORPUS_TIMEOUT" env LD_PRELOAD="$preload" $toolenv "$exe" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	t1=$(date +%s.%N)
	groups <"$TMPD/err" >"$TMPD/groups"
	got_d=$(sum Direct); got_i=$(sum Indirect)
	[ "$got_d" = "$want_d" ] || why="$why; direct $got_d, expected $want_d"
	[ "$got_i" = "$want_i" ] || why="$why; indirect $got_i, expected $want_i"
	total_b=$(( ${want_d%/*} + ${want_i%/*} )); total_n=$(( ${want_d#*/} + ${want_i#*/} ))
	summary=$(sed -n 's/.*SUMMARY:.* \([0-9][0-9]*\) byte(s) leaked in \([0-9][0-9]*\) allocation(s).*/\1\/\2/p' "$TMPD/err")
	if [ "$total_n" -gt 0 ]; then
		[ "$rc" -eq 23 ] || why="$why; status $rc, expected 23"
		[ "$summary" = "$total_b/$total_n" ] || why="$why; SUMMARY '${summary:-none}', expected $total_b/$total_n"
	else
		[ "$rc" -eq 0 ] || why="$why; status $rc, expected 0"
		[ -z "$summary" ] || why="$why; a SUMMARY ($summary) for a clean program"
	fi
	cmp -s "$TMPD/out" "$TMPD/plain.out" || why="$why; stdout differs from the plain run"
	stack_ok=yes
	field "$f" STACK >"$TMPD/stacks"
	while read -r want; do
		[ -n "$want" ] || continue
		if ! awk -v w="$want" '{ n = split(w, a, " "); ok = 1
			for (i = 1; i <= n; i++) if ($(3 + i) != a[i]) ok = 0
			if (ok) found = 1 } END { exit !found }' "$TMPD/groups"; then
			why="$why; no group allocated from '$want'"; stack_ok=no
		fi
	done <"$TMPD/stacks"
	secs=$(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }')
	verdict=right
	{ [ "$total_n" -gt 0 ] && [ "$rc" -ne 23 ]; } || { [ "$total_n" -eq 0 ] && [ "$rc" -ne 0 ]; } && verdict=wrong
	echo "$name $CORPUS_TOOL direct=$got_d indirect=$got_i want_direct=$want_d want_indirect=$want_i rc=$rc verdict=$verdict stack=$stack_ok secs=$secs" >>"$CORPUS_RESULTS"
	case " $xfail " in *" $name "*) isx=1 ;; *) isx=0 ;; esac
	if [ -z "$why" ]; then
		if [ $isx = 1 ]; then echo "XPASS $name: listed as failing; take it off xfail"; fails=$((fails + 1))
		else echo "ok $name ($secs s)"; passes=$((passes + 1)); fi
	else
		why=${why#; }
		if [ $isx = 1 ]; then echo "XFAIL $name: $why"; xfails=$((xfails + 1))
		else
			echo "FAIL $name: $why"; fails=$((fails + 1))
			sed 's/^/  err: /' "$TMPD/err" | head -${CORPUS_SHOW:-12}
		fi
	fi
done
# CONTIG_LEAKS_DEPTH (the stack side's own variable): deep.c's leak is 30 calls deep, so exactly
# that many frames (3, 34: the whole stack is 36) are kept; a bad value is named on one line and the default (16) used.
if [ "$CORPUS_TOOL" = contig ] && [ -x "$TMPD/deep" ]; then
	frames() { awk '/leak of/ { on = 1; next } on && $1 ~ /^#[0-9]+$/ { n++ } on && $1 !~ /^#/ { on = 0 } END { print n + 0 }' "$TMPD/err"; }
	for d in 3 34; do
		LD_PRELOAD="$LIBCONTIG" CONTIG_LEAKS=report CONTIG_LEAKS_DEPTH=$d "$TMPD/deep" >/dev/null 2>"$TMPD/err"
		n=$(frames)
		if [ "$n" -eq "$d" ]; then passes=$((passes + 1)); echo "ok CONTIG_LEAKS_DEPTH=$d: $n frames"
		else fails=$((fails + 1)); echo "FAIL CONTIG_LEAKS_DEPTH=$d: $n frames in the report"; fi
	done
	LD_PRELOAD="$LIBCONTIG" CONTIG_LEAKS=report CONTIG_LEAKS_DEPTH=lots "$TMPD/deep" >/dev/null 2>"$TMPD/err"
	n=$(frames)
	if grep -q '^libcontig: CONTIG_LEAKS_DEPTH="lots" is not a number of frames from 1 to 64; using 16$' "$TMPD/err" &&
	   [ "$n" -eq 16 ]; then
		passes=$((passes + 1)); echo "ok CONTIG_LEAKS_DEPTH=lots: named, 16 frames"
	else
		fails=$((fails + 1)); echo "FAIL CONTIG_LEAKS_DEPTH=lots: $n frames, stderr: $(head -2 "$TMPD/err")"
	fi
fi
# A leak in the constructor of a library the program needs: that constructor runs before the
# checker's own, and the stack must already be captured (ctorleak-lib.c states the truth).
if [ -z "$CORPUS_ONLY" ] || case " $CORPUS_ONLY " in *" ctorleak "*) true ;; *) false ;; esac; then
	why=""
	if $CC -g -O2 -fomit-frame-pointer -fPIC -shared -I"$src" -o "$TMPD/libctorleak.so" "$src/ctorleak-lib.c" &&
	   $CC -g -O2 -o "$TMPD/ctorleak" "$src/ctorleak-main.c" -L"$TMPD" -lctorleak -Wl,-rpath,"$TMPD"; then
		timeout -k 5 "$CORPUS_TIMEOUT" env LD_PRELOAD="$preload" $toolenv "$TMPD/ctorleak" >/dev/null 2>"$TMPD/err"
		rc=$?
		groups <"$TMPD/err" >"$TMPD/groups"
		[ "$(sum Direct)" = 55/1 ] || why="direct $(sum Direct), expected 55/1"
		[ "$rc" -eq 23 ] || why="${why:+$why; }status $rc, expected 23"
		awk '$1 == "Direct" && $4 == "ctor_leak" && $5 == "ctor_init" { f = 1 } END { exit !f }' "$TMPD/groups" ||
			why="${why:+$why; }no group allocated from 'ctor_leak ctor_init'"
	else
		why="does not compile"
	fi
	if [ -z "$why" ]; then passes=$((passes + 1)); echo "ok ctorleak (a dependency's constructor)"
	else fails=$((fails + 1)); echo "FAIL ctorleak: $why"; sed 's/^/  err: /' "$TMPD/err" | head -8; fi
fi
echo "$passes passed, $fails failed, $xfails expected failures ($CORPUS_TOOL)"
[ "$fails" -eq 0 ]
