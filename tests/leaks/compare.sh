#!/bin/sh
# compare.sh - libcontig's leak checking beside LeakSanitizer, as tables for docs/leaks.md (not
# part of make check: it takes minutes and its times are machine-dependent).
#   sh tests/leaks/compare.sh [BUILDDIR]     (default: build; needs liblsan0, binutils)
# 1. the seeded corpus (corpus.sh) under libcontig, LSan as it comes (fast frame-pointer unwinding
#    on malloc) and LSan with fast_unwind_on_malloc=0 (DWARF unwinding, like libcontig);
# 2. real Debian programs: leaks reported, stdout the same as without a preload, crash, time;
# 3. the exit scan's speed on a program with a 1 GiB heap (bigheap.c).
# 4. the cost of a malloc+free in leak mode (the stack capture), beside LSan's two unwinders.
# COMPARE_RUNS (default 3): runs per timing, the fastest is kept (the scan section: the median). COMPARE_BIG_MIB (1024).
# 3b. (scanir, not in the default set) the instructions the check takes on a COMPARE_IR_MIB (64)
#    MiB heap, under callgrind.
# COMPARE_SECTIONS (default "corpus real scan capture"): which of them to run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${1:-$top/build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
LIBCONTIG=$build/preload/.libs/libcontig.so
[ -f "$LIBCONTIG" ] || { echo "no $LIBCONTIG: build first" >&2; exit 1; }
LSAN=$(for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do [ -f "$d/liblsan.so.0" ] && echo "$d/liblsan.so.0" && break; done)
[ -n "$LSAN" ] || { echo "liblsan.so.0 not found (apt-get install liblsan0)" >&2; exit 1; }
: "${COMPARE_RUNS:=3}"
: "${COMPARE_BIG_MIB:=1024}"
: "${COMPARE_IR_MIB:=64}"
: "${COMPARE_SECTIONS:=corpus real scan capture}"
want() { case " $COMPARE_SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }
: "${CC:=cc}"
TESTS_SRCDIR=$top/tests
export LIBCONTIG CC TESTS_SRCDIR
for v in $(env | sed -n 's/^\(CONTIG_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset LSAN_OPTIONS ASAN_OPTIONS PYTHONMALLOC

T=$(mktemp -d "${TMPDIR:-/tmp}/contig-compare.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

echo "Measured $(date -u +%Y-%m-%d) on $(uname -sr), $(nproc) CPUs, $(ldd --version | head -1 | sed 's/.* //') glibc,"
echo "libcontig $(git -C "$top" describe --always --dirty 2>/dev/null || echo '?'), LeakSanitizer from $(dpkg-query -W -f '${Package} ${Version}' liblsan0 2>/dev/null || echo liblsan.so.0)."
echo

leaks_of() {   # ERR -> "B/N" summed over every SUMMARY line (several processes may report)
	{ sed -n 's/.*SUMMARY:.* \([0-9][0-9]*\) byte(s) leaked in \([0-9][0-9]*\) allocation(s).*/\1 \2/p' "$1"
	  sed -n 's/.*\(definitely\|indirectly\) lost: \([0-9,]*\) bytes in \([0-9,]*\) blocks.*/\2 \3/p' "$1" | tr -d ,
	} | awk '{ b += $1; n += $2 } END { printf "%d/%d", b, n }'
}

## ---- 1. the corpus ----
if want corpus; then
for tool in contig lsan lsan-dwarf; do
	case $tool in
	contig) CORPUS_RESULTS=$T/res-$tool CORPUS_TOOL=contig sh "$here/corpus.sh" ;;
	lsan) CORPUS_RESULTS=$T/res-$tool CORPUS_TOOL=lsan sh "$here/corpus.sh" ;;
	lsan-dwarf) CORPUS_RESULTS=$T/res-$tool CORPUS_LSAN_OPTIONS=fast_unwind_on_malloc=0 CORPUS_TOOL=lsan sh "$here/corpus.sh" ;;
	esac >"$T/corpus-$tool.log" 2>&1 </dev/null
done
echo "### The seeded corpus"
echo
echo "Each cell: leaked bytes/objects found (direct + indirect) and whether the verdict (exit 23 iff"
echo "a true leak), the exact counts and the first frames are right. LSan-fp is LeakSanitizer as it"
echo "comes (frame-pointer unwinding on malloc); LSan-dwarf has fast_unwind_on_malloc=0."
echo
echo "| case | truth | libcontig | LSan-fp | LSan-dwarf |"
echo "|---|---|---|---|---|"
cell() {   # LOG NAME
	awk -v n="$2" '$1 == n {
		split($3, d, "[=/]"); split($4, i, "[=/]"); split($5, wd, "[=/]"); split($6, wi, "[=/]")
		exact = (d[2] == wd[2] && d[3] == wd[3] && i[2] == wi[2] && i[3] == wi[3])
		v = $8; sub("verdict=", "", v); s = $9; sub("stack=", "", s)
		printf "%d/%d %s%s%s", d[2] + i[2], d[3] + i[3], v == "right" ? "ok" : "WRONG verdict",
			exact ? "" : ", counts off", s == "yes" ? "" : ", stack short"
	}' "$1"
}
for f in "$here"/*.c "$here"/*.cc; do
	grep -q 'EXPECT:' "$f" || continue
	n=$(basename "$f"); n=${n%.*}
	truth=$(sed -n 's/^[ /*]*EXPECT: *//p' "$f" | awk '{ split($1, d, "[=/]"); split($2, i, "[=/]"); printf "%d/%d", d[2] + i[2], d[3] + i[3] }')
	echo "| $n | $truth | $(cell "$T/res-contig" "$n") | $(cell "$T/res-lsan" "$n") | $(cell "$T/res-lsan-dwarf" "$n") |"
done
for tool in contig lsan lsan-dwarf; do
	echo
	echo "$tool: $(tail -1 "$T/corpus-$tool.log")"
done
echo
fi

## ---- 2. real programs ----
if want real; then
# A small git repository and inputs, made here.
mkdir -p "$T/repo" "$T/in"
git -C "$T/repo" init -q
for i in 1 2 3 4 5 6 7 8; do
	echo "line $i" >>"$T/repo/file.txt"
	git -C "$T/repo" add file.txt
	git -C "$T/repo" -c user.name=t -c user.email=t@e commit -q -m "commit $i"
done
seq 1 200000 | awk '{ print ($1 * 7919) % 100003, $1 }' >"$T/in/sort.txt"
cat >"$T/in/small.c" <<'CEOF'
#include <stdio.h>
struct point { int x, y; };
static int dot(struct point a, struct point b) { return a.x * b.x + a.y * b.y; }
int main(void) { struct point a = { 1, 2 }, b = { 3, 4 }; printf("%d\n", dot(a, b)); return 0; }
CEOF
py=/usr/bin/python3; [ -x "$py" ] || py=$(command -v python3)

# name|command (run by sh -c in $T/in)
cat >"$T/programs" <<PEOF
ls /|ls /
ls -l|ls -l /usr/share/man
sort|sort -n sort.txt
python3|$py -c pass
python3 PYTHONMALLOC=malloc|PYTHONMALLOC=malloc $py -c 'import json, re; print(len(json.dumps(list(range(10000)))))'
git log|git -C $T/repo log --stat
sqlite3|sqlite3 :memory: <$top/tests/preload/sqlite-workload.sql
perl -e|perl -e 'my %h; \$h{\$_} = "x" x (\$_ % 50) for 1..50000; print scalar(keys %h), "\\n"'
gcc -c|gcc -O2 -c small.c -o small.o
awk|awk '{ s[\$1 % 1000] += \$2 } END { n = 0; for (k in s) n++; print n }' sort.txt
find|find /usr/include -name '*.h' | wc -l
PEOF

# How a command runs under each tool. The shell that runs it is under the tool too (a real
# program as well): its reports count.
run_tool() {   # TOOL OUT ERR CMD
	case $1 in
	plain) set -- "$2" "$3" "$4" ;;
	contig) set -- "$2" "$3" "$4" LD_PRELOAD="$LIBCONTIG" CONTIG_LEAKS=error ;;
	lsan) set -- "$2" "$3" "$4" LD_PRELOAD="$LSAN" LSAN_OPTIONS=exitcode=23 ;;
	valgrind) set -- "$2" "$3" "$4" valgrind --trace-children=yes --leak-check=full --show-leak-kinds=none \
		--errors-for-leak-kinds=definite,indirect --error-exitcode=23 ;;
	esac
	_o=$1 _e=$2 _c=$3; shift 3
	(cd "$T/in" && timeout -k 5 600 env "$@" sh -c "$_c") >"$_o" 2>"$_e"
}

fastest() {   # TOOL CMD -> sets secs (fastest of COMPARE_RUNS), rc, out, err in $T/TOOL.*
	best=""
	r=0
	while [ "$r" -lt "$COMPARE_RUNS" ]; do
		t0=$(date +%s.%N)
		run_tool "$1" "$T/$1.out" "$T/$1.err" "$2"
		rc=$?
		t1=$(date +%s.%N)
		s=$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')
		best=$(echo "${best:-$s} $s" | awk '{ print ($2 < $1) ? $2 : $1 }')
		r=$((r + 1))
	done
	secs=$best
}


echo "### Real programs"
echo
echo "Leaks: bytes/allocations reported (summed over every process the command starts: the shell,"
echo "gcc's cc1 and as, ...); a non-zero count is either a real leak of the program or a false"
echo "report. Same stdout: compared with the run without a preload. Times: the fastest of"
echo "$COMPARE_RUNS runs, wall clock; libcontig with CONTIG_LEAKS=error, LSan with exitcode=23."
echo
echo "| program | plain s | libcontig leaks | stdout | status | s | LSan leaks | stdout | status | s | valgrind lost |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
while IFS='|' read -r name cmd; do
	fastest plain "$cmd"; p_s=$secs; p_rc=$rc
	line="| $name | $p_s"
	for tool in contig lsan; do
		fastest $tool "$cmd"
		same=same; cmp -s "$T/plain.out" "$T/$tool.out" || same=DIFFERS
		st=$rc
		[ "$rc" -ge 124 ] && st="$rc CRASH/TIMEOUT"
		[ "$rc" -eq "$p_rc" ] && st="$rc (as plain)"
		found=$(leaks_of "$T/$tool.err")
		[ "$rc" -eq 23 ] && [ "$found" = 0/0 ] && found="? (report lost: the program closed stderr)"
		line="$line | $found | $same | $st | $secs"
		cp "$T/$tool.err" "$T/last-$tool-$(echo "$name" | tr -c 'a-z0-9\n' _).err"
	done
	# valgrind memcheck as a third opinion: definitely + indirectly lost (one run, not timed)
	run_tool valgrind "$T/vg.out" "$T/vg.err" "$cmd"
	echo "$line | $(leaks_of "$T/vg.err") |"
done <"$T/programs"
echo
if [ -n "${COMPARE_KEEP:-}" ]; then mkdir -p "$COMPARE_KEEP" && cp "$T"/last-*.err "$COMPARE_KEEP"/; fi
fi

## ---- 3. scan speed ----
if want scan; then
$CC -O2 -o "$T/bigheap" "$here/bigheap.c" || exit 1
big() {   # LEAK TOOL-ENV...: runs bigheap (LEAK: leak or noleak), prints "total_s exit_s"
	_leak=$1; shift
	t0=$(date +%s.%N)
	env "$@" "$T/bigheap" "$COMPARE_BIG_MIB" "$_leak" >/dev/null 2>"$T/big.err"
	t1=$(date +%s.%N)
	ret=$(sed -n 's/.*returning at \([0-9.]*\).*/\1/p' "$T/big.err")
	echo "$t0 $ret $t1" | awk '{ printf "%.2f %.2f\n", $3 - $1, $3 - $2 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "### Exit scan on a ${COMPARE_BIG_MIB} MiB heap"
echo
echo "bigheap.c: ${COMPARE_BIG_MIB} MiB in 4 KiB blocks, every 8th word a pointer into the heap, one"
echo "100-byte leak. 'after main' is the time from main's return to the process's end: the check,"
echo "its report (symbolising the leak's stack) and the process's exit. Median of $COMPARE_RUNS runs,"
echo "the tools taking turns; MiB per s is the heap's size over the median 'after main'. The"
echo "-noleak runs build the same heap without the leak: nothing to report, so 'after main' is the"
echo "scan and the exit."
echo
echo "| run | total s | after main s | MiB scanned per s | leak found |"
echo "|---|---|---|---|---|"
bigruns="plain contig-report lsan contig-noleak lsan-noleak"
r=0
while [ "$r" -lt "$COMPARE_RUNS" ]; do
	for tool in $bigruns; do
		case $tool in
		plain) set -- leak LD_PRELOAD=$LIBCONTIG ;;
		contig-report) set -- leak LD_PRELOAD=$LIBCONTIG CONTIG_LEAKS=report ;;
		lsan) set -- leak LD_PRELOAD=$LSAN ;;
		contig-noleak) set -- noleak LD_PRELOAD=$LIBCONTIG CONTIG_LEAKS=report ;;
		lsan-noleak) set -- noleak LD_PRELOAD=$LSAN ;;
		esac
		big "$@" >>"$T/big-$tool.times"
		leaks_of "$T/big.err" >"$T/big-$tool.found"
	done
	r=$((r + 1))
done
for tool in $bigruns; do
	total=$(cut -d' ' -f1 "$T/big-$tool.times" | median)
	after=$(cut -d' ' -f2 "$T/big-$tool.times" | median)
	rate=$(echo "$after $COMPARE_BIG_MIB" | awk '{ if ($1 > 0.01) printf "%.0f", $2 / $1; else print "-" }')
	[ "$tool" = plain ] && rate="(no check)"
	echo "| $tool | $total | $after | $rate | $(cat "$T/big-$tool.found") |"
done
echo
fi

## ---- 3b. scan instructions (valgrind's callgrind: steady on a shared machine) ----
if want scanir; then
$CC -O2 -o "$T/bigheap" "$here/bigheap.c" || exit 1
echo "### Instructions of the check on a ${COMPARE_IR_MIB} MiB heap"
echo
echo "callgrind, counting only inside run_check (the library must keep its symbols): the scan, the"
echo "marks and the grouping, not the report. bigheap.c with ${COMPARE_IR_MIB} MiB. 'heap blocks' is"
echo "the part spent scanning popped blocks (scan_block_at); the rest is mostly the roots, which under"
echo "valgrind include mappings of its own."
echo
echo "| run | instructions | heap blocks | per heap word |"
echo "|---|---|---|---|"
LD_PRELOAD=$LIBCONTIG CONTIG_LEAKS=report valgrind --tool=callgrind --callgrind-out-file="$T/cg.%p" \
	--toggle-collect=run_check "$T/bigheap" "$COMPARE_IR_MIB" >/dev/null 2>"$T/cg.err"
cg=$(ls "$T"/cg.[0-9]* | head -1)
ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$cg")
heap=$(callgrind_annotate --inclusive=yes "$cg" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*leak\.c:scan_block_at .*/\1/p' | head -1 | tr -d ,)
echo "| contig-report | $ir | $heap | $(echo "${heap:-0} $COMPARE_IR_MIB" | awk '{ printf "%.1f", $1 / ($2 * 131072) }') |"
echo
fi

## ---- 4. capture cost ----
if want capture; then
$CC -O2 -fomit-frame-pointer -o "$T/capture-bench" "$here/capture-bench.c" || exit 1
echo "### Cost of a malloc+free in leak mode"
echo
echo "capture-bench.c: malloc+free five calls deep, 10^6 times, -O2 -fomit-frame-pointer; the"
echo "fastest of $COMPARE_RUNS runs. Leak mode captures the allocation stack of every block."
echo
echo "| run | ns per malloc+free |"
echo "|---|---|"
for tool in glibc libcontig libcontig-leaks lsan-fp lsan-dwarf; do
	case $tool in
	glibc) set -- ;;
	libcontig) set -- LD_PRELOAD=$LIBCONTIG ;;
	libcontig-leaks) set -- LD_PRELOAD=$LIBCONTIG CONTIG_LEAKS=report ;;
	lsan-fp) set -- LD_PRELOAD=$LSAN ;;
	lsan-dwarf) set -- LD_PRELOAD=$LSAN LSAN_OPTIONS=fast_unwind_on_malloc=0 ;;
	esac
	best=""
	r=0
	while [ "$r" -lt "$COMPARE_RUNS" ]; do
		ns=$(env "$@" "$T/capture-bench" 2>/dev/null | sed -n 's/^\([0-9.]*\) ns.*/\1/p')
		best=$(echo "${best:-$ns} $ns" | awk '{ print ($2 < $1) ? $2 : $1 }')
		r=$((r + 1))
	done
	echo "| $tool | $best |"
done
fi
