#!/bin/bash
# run.sh - other people's test suites under the library (make check-external).
#
# Runs two test suites written by others, first without libcontig and then under LD_PRELOAD of
# it, and compares the outcome of every test unit: the two sets must be the same.
#   python  a fixed subset of CPython's regression tests (python-tests.txt), Debian's
#           libpythonX.Y-testsuite, run by /usr/bin/python3 -m test
#   glib    GLib's own test suite as Debian installs it (libglib2.0-tests: one GTest
#           program each, TAP output), all of it but glib-skip.txt
# A unit's outcome is its status (pass, skip, fail, crash, timeout...) together with the names of
# its failing test cases (Python: from regrtest's JUnit XML; GLib: the "not ok" and "# SKIP"
# TAP lines). Tests that fail without the library are fine as long as they fail the same way.
#
# Environment:
#   EXTERNAL_GLIB_TIMEOUT   seconds per GLib test program, default 60; EXTERNAL_PY_TIMEOUT: per
#                           Python test module, default 120
#   LIBCONTIG               the library (required), e.g. $builddir/preload/.libs/libcontig.so
#   EXTERNAL_SUITES         "python glib" (default) or one of them
#   EXTERNAL_JOBS           parallel jobs, default 2
#   EXTERNAL_PYTHONMALLOC   malloc (default: every Python object is a malloc of the library) or
#                           pymalloc (Python's arenas, which it takes from mmap)
#   EXTERNAL_RETRY          1 (default): a unit that differs is run once more both ways, and
#                           counts as the same (shown as "flaky") only if the reruns agree; 0: no rerun
#   EXTERNAL_UNITS          only these units (space separated names of either suite)
#   EXTERNAL_VERBOSE        1: print the table of every unit, not only the ones that did not pass
#   EXTERNAL_WORKDIR        where logs go (default a new /tmp/contig-external.XXXXXX, removed
#                           when everything matched, kept otherwise)
#   CONTIG_*                passed on: the library run uses the caller's settings
#   EXTERNAL_LEAKS          1: a third pass, leak mode (CONTIG_LEAKS=report): each unit's
#                           outcome must match the run without the library again, and the exit
#                           leak reports of all its processes are collected per unit (in
#                           SUITE-leak/leaks/UNIT/, through leakfd.c, so they stay off the
#                           program's stderr) and summarised: "external-leaks: N units clean,
#                           M explained (suppressed), K unexplained"; K > 0 fails the run.
#                           only: the leak pass instead of the plain library pass (LEAKS.md)
#   EXTERNAL_LEAKS_SUPPRESS suppressions for that pass, default leaks.supp beside this script
#   CC                      compiles leakfd.c for the leak pass (default cc)
# Installs libpythonX.Y-testsuite and libglib2.0-tests with apt-get when root and missing.
# Exit status: 0 all units match, 1 some differ, 77 a suite could not be set up, 99 usage error.
# The last line is "external: N passed, M failed" (failed = outcome differs with the library);
# with EXTERNAL_LEAKS=1 the line before it is the leak verdict.

set -u
export LC_ALL=C.UTF-8

here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3                       # the system interpreter, never a pyenv shim
JOBS=${EXTERNAL_JOBS:-2}
SUITES=${EXTERNAL_SUITES:-python glib}
PYMALLOC=${EXTERNAL_PYTHONMALLOC:-malloc}
RETRY=${EXTERNAL_RETRY:-1}
GLIB_TIMEOUT=${EXTERNAL_GLIB_TIMEOUT:-60}
PY_TIMEOUT=${EXTERNAL_PY_TIMEOUT:-120}
GLIB_DEFS=/usr/share/installed-tests/glib
LEAKS=${EXTERNAL_LEAKS:-0}
LEAKS_SUPP=${EXTERNAL_LEAKS_SUPPRESS:-$here/leaks.supp}

say() { printf 'external: %s\n' "$*"; }
die() { say "$2"; echo "external: 0 passed, 1 failed"; exit "$1"; }

[ -n "${LIBCONTIG:-}" ] || die 99 "LIBCONTIG is not set (make check-external sets it)"
[ -f "$LIBCONTIG" ] || die 99 "library $LIBCONTIG not found (build it first)"
LIB=$(readlink -f "$LIBCONTIG")
# ld.so ignores a library it cannot preload, with only a message: then both runs would be the
# same run, and would match.
msg=$(LD_PRELOAD=$LIB /bin/true 2>&1)
case $msg in *ld.so*|*"cannot be preloaded"*) die 99 "$LIB cannot be preloaded: $msg" ;; esac

if [ -n "${EXTERNAL_WORKDIR:-}" ]; then
	work=$EXTERNAL_WORKDIR; mkdir -p "$work" || exit 99
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/contig-external.XXXXXX") || exit 99
fi
work=$(cd "$work" && pwd)
ulimit -c 0 2>/dev/null || :

# The leak pass preloads leakfd.so in front of the library: it moves fd 2 to a file of the unit's
# just before the library's exit report (leakfd.c).
SHIM=
modes="base lib"
if [ "$LEAKS" = 1 ] || [ "$LEAKS" = only ]; then
	SHIM=$work/leakfd.so
	"${CC:-cc}" -O2 -shared -fPIC -o "$SHIM" "$here/leakfd.c" >"$work/leakfd.log" 2>&1 ||
		{ cat "$work/leakfd.log"; die 99 "cannot compile $here/leakfd.c"; }
	[ -r "$LEAKS_SUPP" ] || die 99 "suppressions $LEAKS_SUPP cannot be read"
	LEAKS_SUPP=$(readlink -f "$LEAKS_SUPP")
	modes="base lib leak"
	[ "$LEAKS" = only ] && modes="base leak"
fi
export SHIM LEAKS_SUPP

# The environment both runs share: nothing from the caller's Python, D-Bus session or display.
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONUSERBASE PYTHONDEVMODE PYTHONWARNINGS PYTHONMALLOC \
	PYTHONHASHSEED PYTHONDONTWRITEBYTECODE LD_PRELOAD DBUS_SESSION_BUS_ADDRESS \
	DISPLAY WAYLAND_DISPLAY G_DEBUG G_MESSAGES_DEBUG G_SLICE GIO_USE_VFS

# need PATH PACKAGE: PATH exists, or install PACKAGE when root.
need() {
	[ -e "$1" ] && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		say "installing $2"
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y --no-install-recommends "$2" >"$work/apt-$2.log" 2>&1 ||
			{ apt-get update >>"$work/apt-$2.log" 2>&1 &&
			  apt-get install -y --no-install-recommends "$2" >>"$work/apt-$2.log" 2>&1; } ||
			{ tail -5 "$work/apt-$2.log"; }
	fi
	[ -e "$1" ] && return 0
	say "$1 is missing: install $2 (as root this script does it)"
	return 1
}

now() { date +%s; }
names() { sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^[[:space:]]*$/d' "$1" | awk '{print $1}'; }

# ---- Python -------------------------------------------------------------------------------
# py_one OUTDIR NAME: the leak pass runs regrtest once per module (-j1: the module still runs in
# a worker process of its own, as with -jN), so that every process it starts has the unit's
# leak directory.
py_one() {
	local out=$1 n=$2 pm=()
	[ "$PYMALLOC" = malloc ] && pm=(PYTHONMALLOC=malloc)
	mkdir -p "$out/tmp/$n" "$out/home/$n" "$out/leaks/$n"
	(cd "$out/tmp/$n" && env HOME="$out/home/$n" TMPDIR="$out/tmp/$n" "${pm[@]}" \
		LD_PRELOAD="$SHIM:$LIB" CONTIG_LEAKS=report CONTIG_LEAKS_SUPPRESS="$LEAKS_SUPP" \
		EXTERNAL_LEAKS_DIR="$out/leaks/$n" \
		timeout -k 10 $((PY_TIMEOUT * 2 + 60)) "$PY" -m test -j1 --timeout "$PY_TIMEOUT" \
		--junit-xml "$out/junit/$n.xml" "$n" </dev/null >"$out/logs/$n.log" 2>&1)
	rm -rf "$out/tmp/$n"
}
export -f py_one
export PY PYMALLOC PY_TIMEOUT

# py_run MODE OUTDIR NAMES...: regrtest over NAMES; MODE is base, lib or leak.
py_run() {
	local mode=$1 out=$2; shift 2
	local pre=() pm=()
	mkdir -p "$out/tmp" "$out/home"
	[ "$mode" = lib ] && pre=(LD_PRELOAD="$LIB")
	[ "$PYMALLOC" = malloc ] && pm=(PYTHONMALLOC=malloc)
	if [ "$mode" = leak ]; then
		mkdir -p "$out/logs" "$out/junit" "$out/leaks"
		printf '%s\n' "$@" | xargs -P "$JOBS" -I{} bash -c 'py_one "$@"' _ "$out" {} \
			2>"$out/xargs.err"
		local n; for n in "$@"; do cat "$out/logs/$n.log"; done >"$out/log"
		echo 0 >"$out/rc"
	else
	(cd "$out/tmp" && env HOME="$out/home" TMPDIR="$out/tmp" "${pm[@]}" "${pre[@]}" \
		timeout -k 10 1200 "$PY" -m test -j"$JOBS" --timeout "$PY_TIMEOUT" \
		--junit-xml "$out/junit.xml" "$@" </dev/null >"$out/log" 2>&1)
	echo $? >"$out/rc"
	fi
	"$PY" - "$out" "$@" <<'EOF'
import os, re, sys
import xml.etree.ElementTree as ET
out, names = sys.argv[1], sys.argv[2:]
status, failing = {}, {n: set() for n in names}
line = re.compile(r'\[\s*\d+/\d+(?:/\d+)?\] (test_\w+) (.*)$')
for l in open(os.path.join(out, 'log'), errors='replace'):
    m = line.search(l.rstrip('\n'))
    if m and m.group(1) in failing:
        s = re.sub(r' -- running: .*$', '', m.group(2))
        s = re.sub(r' \(\d[^)]*(sec|min|ms)\)$', '', s)      # "(30.7 sec)", "(1 min 9 sec)"
        status[m.group(1)] = s.strip()
import glob
for xml in [os.path.join(out, 'junit.xml')] + sorted(glob.glob(os.path.join(out, 'junit', '*.xml'))):
    try:
        root = ET.parse(xml).getroot()
    except (OSError, ET.ParseError):
        continue
    for tc in root.iter('testcase'):
        m = re.search(r'test\.(test_\w+)', tc.get('name', ''))
        if m and m.group(1) in failing:
            bad = [c.tag for c in tc if c.tag in ('failure', 'error')]
            if bad:
                failing[m.group(1)].add(tc.get('name').split('.', 2)[-1] + ':' + bad[0])
with open(os.path.join(out, 'results.tsv'), 'w') as f:
    for n in names:
        s = status.get(n, 'not run')
        cls = ('pass' if s == 'passed' else
               'skip' if s.startswith(('skipped', 'resource denied', 'run no tests')) else
               'envchanged' if 'env changed' in s else 'fail')
        f.write('%s\t%s\t%s\t%s\n' % (n, cls, s, ' '.join(sorted(failing[n]))))
EOF
}

# ---- GLib ---------------------------------------------------------------------------------
# glib_one MODE OUTDIR NAME: one installed test program; one line of results.
glib_one() {
	local mode=$1 out=$2 t=$3 exe d rc s e log
	exe=$(sed -n 's/^Exec=//p' "$GLIB_DEFS/$t.test" | head -n 1)
	if [ "$mode" != base ]; then
		local preload=$LIB
		if [ "$mode" = leak ]; then
			preload=$SHIM:$LIB
			mkdir -p "$out/leaks/$t"
			exe="env CONTIG_LEAKS=report CONTIG_LEAKS_SUPPRESS=$LEAKS_SUPP EXTERNAL_LEAKS_DIR=$out/leaks/$t $exe"
		fi
		# A test that preloads a helper of its own (gsocketclient-slow) gets ours in front of it.
		case $exe in
		*LD_PRELOAD=*) exe=$(printf '%s' "$exe" | sed "s|LD_PRELOAD=|LD_PRELOAD=$preload:|") ;;
		*) exe="env LD_PRELOAD=$preload $exe" ;;
		esac
	fi
	d=$(mktemp -d "$out/tmp/$t.XXXXXX"); log=$out/logs/$t.log
	s=$(date +%s.%N)
	# shellcheck disable=SC2086 # Exec= lines are plain words
	(cd "$d" && HOME=$d XDG_RUNTIME_DIR=$d XDG_CONFIG_HOME=$d/config XDG_DATA_HOME=$d/data \
		XDG_CACHE_HOME=$d/cache TMPDIR=$d timeout -k 10 "$GLIB_TIMEOUT" $exe </dev/null >"$log" 2>&1)
	rc=$?
	e=$(date +%s.%N)
	rm -rf "$d"
	local cls
	case $rc in
	0) cls=pass ;; 77) cls=skip ;; 124|137) cls=timeout ;;
	*) if [ "$rc" -gt 128 ]; then cls="signal$((rc - 128))"; else cls=fail; fi ;;
	esac
	local notok skip nok
	notok=$(sed -n 's/^not ok [0-9]* *//p' "$log" | sed 's/ *#.*//' | sort | tr '\n' ' ')
	skip=$(sed -n 's/^ok [0-9]* *\(.*\)# *SKIP.*/\1/p' "$log" | sed 's/ *$//' | sort | tr '\n' ' ')
	nok=$(grep -c '^ok ' "$log")
	grep -q '^Bail out!' "$log" && notok="${notok}BAIL "
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%.1f\n' "$t" "$cls" "$rc" "$nok" "$notok" "$skip" \
		"$(echo "$e - $s" | bc)"
}
export -f glib_one
export LIB GLIB_DEFS GLIB_TIMEOUT

# glib_run MODE OUTDIR NAMES...
glib_run() {
	local mode=$1 out=$2; shift 2
	mkdir -p "$out/tmp" "$out/logs"
	printf '%s\n' "$@" | xargs -P "$JOBS" -I{} bash -c 'glib_one "$@"' _ "$mode" "$out" {} \
		>"$out/results.raw" 2>"$out/xargs.err"
	# results.tsv: name, class, rc, then the comparison detail; sorted for the comparison.
	awk -F'\t' -v OFS='\t' '{ d = "not-ok: " $5; if ($6 != "") d = d " | skip: " $6;
		print $1, $2, "exit " $3 ", " $4 " ok", d, $7 }' "$out/results.raw" | sort >"$out/results.tsv"
	rm -rf "$out/tmp"
}

# ---- both runs and the comparison ---------------------------------------------------------
# Each suite writes $work/SUITE-{base,lib}/results.tsv: name, class, shown status, detail.
# Same outcome = same class and same detail.
declare -A secs
units_python=() units_glib=()

setup_python() {
	need "$PY" python3 || return 1
	local v; v=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || return 1
	# (libregrtest alone comes with the stdlib)
	need "/usr/lib/python$v/test/test_list.py" "libpython$v-testsuite" || return 1
	mapfile -t units_python < <(names "$here/python-tests.txt")
	local missing=() n
	for n in "${units_python[@]}"; do
		[ -e "/usr/lib/python$v/test/$n.py" ] || [ -d "/usr/lib/python$v/test/$n" ] || missing+=("$n")
	done
	[ ${#missing[@]} -eq 0 ] || say "python: not in this testsuite (reported as not run): ${missing[*]}"
}

setup_glib() {
	need "$GLIB_DEFS/array-test.test" libglib2.0-tests || return 1
	local skip; skip=" $(names "$here/glib-skip.txt" | tr '\n' ' ') "
	local f n
	for f in "$GLIB_DEFS"/*.test; do
		n=$(basename "$f" .test)
		case $skip in *" $n "*) continue ;; esac
		units_glib+=("$n")
	done
}

# EXTERNAL_UNITS: only these units of each suite (names, space separated).
only_units() {  # SUITE
	[ -n "${EXTERNAL_UNITS:-}" ] || return 0
	local -n all=units_$1
	local keep=() u
	for u in "${all[@]}"; do case " $EXTERNAL_UNITS " in *" $u "*) keep+=("$u") ;; esac; done
	all=("${keep[@]}")
}

run_suite() {   # SUITE MODE [NAMES...]: the whole suite, or NAMES only into SUITE-MODE-rerun
	local suite=$1 mode=$2; shift 2
	local out=$work/$suite-$mode names
	if [ $# -gt 0 ]; then out=$out-rerun; names=("$@"); else
		eval 'names=("${units_'"$suite"'[@]}")'; fi
	rm -rf "$out"; mkdir -p "$out"
	"${suite}_run" "$mode" "$out" "${names[@]}"
}

python_run() { py_run "$@"; }

status=0
for suite in $SUITES; do
	case $suite in python|glib) ;; *) die 99 "unknown suite $suite (python, glib)" ;; esac
	if ! "setup_$suite"; then status=77; continue; fi
	only_units "$suite"
	eval 'n=${#units_'"$suite"'[@]}'
	for mode in $modes; do
		case $mode in base) how="without the library" ;; lib) how="with the library" ;;
		leak) how="with the library in leak mode" ;; esac
		say "$suite: $n units, $how..."
		t0=$(now); run_suite "$suite" "$mode"; secs[$suite-$mode]=$(( $(now) - t0 ))
	done
	# Rerun, every way, the units whose outcome differs: a difference seen twice is one.
	diff=()
	for mode in $modes; do
		[ "$mode" = base ] && continue
		mapfile -t -O "${#diff[@]}" diff < <(join -t $'\t' -j1 \
			<(cut -f1,2,4 "$work/$suite-base/results.tsv" | sed 's/\t/\x1f/2' | sort) \
			<(cut -f1,2,4 "$work/$suite-$mode/results.tsv" | sed 's/\t/\x1f/2' | sort) |
			awk -F'\t' '$2 != $3 { print $1 }')
	done
	mapfile -t diff < <(printf '%s\n' "${diff[@]}" | sed '/^$/d' | sort -u)
	if [ "$RETRY" = 1 ] && [ ${#diff[@]} -gt 0 ]; then
		say "$suite: ${#diff[@]} differ (${diff[*]}); running them again every way"
		t0=$(now)
		for mode in $modes; do JOBS=1 run_suite "$suite" "$mode" "${diff[@]}"; done
		secs[$suite-rerun]=$(( $(now) - t0 ))
	fi
done

# The table, the counts and the verdict.
table_args=()
for suite in $SUITES; do
	for mode in $modes; do
		[ "$mode" = base ] && continue
		[ -f "$work/$suite-base/results.tsv" ] && [ -f "$work/$suite-$mode/results.tsv" ] || continue
		table_args+=("$suite" "$mode" "${secs[$suite-base]}" "${secs[$suite-$mode]}" "${secs[$suite-rerun]:-0}")
	done
done
"$PY" - "$work" "${EXTERNAL_VERBOSE:-0}" "$LIB" "$PYMALLOC" "${table_args[@]}" <<'EOF'
import os, sys
work, verbose, lib, pymalloc, rest = sys.argv[1], sys.argv[2] == '1', sys.argv[3], sys.argv[4], sys.argv[5:]
def load(p):
    r = {}
    if os.path.exists(p):
        for l in open(p, errors='replace'):
            f = l.rstrip('\n').split('\t')
            while len(f) < 4:
                f.append('')
            r[f[0]] = (f[1], f[2], f[3])
    return r
def short(s, n=70):
    s = s.strip()
    return s if len(s) <= n else s[:n - 3] + '...'
passed = failed = 0
summary, rows = [], []
for i in range(0, len(rest), 5):
    suite, mode, tb, tl, tr = rest[i], rest[i+1], int(rest[i+2]), int(rest[i+3]), int(rest[i+4])
    base, libr = load(f'{work}/{suite}-base/results.tsv'), load(f'{work}/{suite}-{mode}/results.tsv')
    rb, rl = load(f'{work}/{suite}-base-rerun/results.tsv'), load(f'{work}/{suite}-{mode}-rerun/results.tsv')
    if mode == 'leak':
        suite += '+leaks'     # the leak pass: CONTIG_LEAKS=report
    same = differ = flaky = bothbad = 0
    for n in sorted(base):
        b, l = base[n], libr.get(n, ('not run', 'not run', ''))
        if (b[0], b[2]) == (l[0], l[2]):
            verdict = 'same'
        elif n in rb and n in rl and (rb[n][0], rb[n][2]) == (rl[n][0], rl[n][2]):
            verdict = 'flaky'   # differed once, the same on the rerun both ways
        else:
            verdict = 'DIFFERS'
        if verdict == 'DIFFERS':
            differ += 1
        else:
            same += 1
            flaky += verdict == 'flaky'
            bothbad += b[0] not in ('pass', 'skip')
        if verbose or verdict != 'same' or b[0] not in ('pass',) or l[0] not in ('pass',):
            rows.append((suite, n, short(b[1], 34), short(l[1], 34), verdict,
                         '' if b[2].strip() in ('', 'not-ok:') and l[2].strip() in ('', 'not-ok:') else short(
                             'without: ' + b[2] + ('  /  with: ' + l[2] if l[2] != b[2] else ''), 110)))
    passed += same; failed += differ
    summary.append((suite, len(base), same, differ, flaky, bothbad, tb, tl, tr))
print()
print(f'library: {lib}  (python: PYTHONMALLOC={pymalloc})')
print(f"{'suite':<12} {'units':>5} {'same':>5} {'differ':>6} {'flaky':>5} {'fail-both':>9} "
      f"{'s-without':>9} {'s-with':>6} {'s-rerun':>7}")
for s in summary:
    print(f'{s[0]:<12} {s[1]:>5} {s[2]:>5} {s[3]:>6} {s[4]:>5} {s[5]:>9} {s[6]:>9} {s[7]:>6} {s[8]:>7}')
print()
print('Units that did not simply pass both ways' + (' (and all others: EXTERNAL_VERBOSE=1)' if verbose else '') + ':')
print(f"{'suite':<12} {'unit':<28} {'without the library':<34} {'with the library':<34} verdict")
for r in rows:
    print(f'{r[0]:<12} {r[1]:<28} {r[2]:<34} {r[3]:<34} {r[4]}')
    if r[5]:
        print(f"{'':<12}   {r[5]}")
with open(f'{work}/counts', 'w') as f:
    f.write(f'{passed} {failed}\n')
EOF
read -r npass nfail <"$work/counts" 2>/dev/null || { npass=0; nfail=1; }
nleak=0
if [ -n "$SHIM" ]; then
	# shellcheck disable=SC2086 # one argument per suite
	leakline=$("$PY" "$here/leaksum.py" "$work" $SUITES) || leakline="external-leaks: summary failed"
	read -r nleak <"$work/leak-counts" 2>/dev/null || nleak=1
	printf '%s\n' "$leakline" | sed '$d'
fi
echo
if [ "$nfail" -eq 0 ] && [ "$nleak" -eq 0 ] && [ "$status" -eq 0 ] && [ "$npass" -gt 0 ]; then
	[ -z "${EXTERNAL_WORKDIR:-}" ] && [ "${EXTERNAL_VERBOSE:-0}" != 1 ] && rm -rf "$work"
	say "every unit has the same outcome with the library"
else
	say "logs kept in $work (SUITE-base/, SUITE-lib/, SUITE-leak/: results.tsv and the suites' own logs; SUITE-leak/leaks/UNIT/: the leak reports)"
	[ "$status" -eq 0 ] && status=1
fi
[ -n "$SHIM" ] && printf '%s\n' "$leakline" | tail -n 1
echo "external: $npass passed, $nfail failed"
exit "$status"
