#!/bin/sh
# env.sh - bad environment values never stop the program: it runs to completion and stderr has
# one line 'libcontig: VAR="VALUE" …' naming the variable and the value; the heap then lies in
# the range actually used. Good values are honoured silently.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

p=$(prog t-basic)
[ -x "$p" ] || fail "$p not built"
failures=0
dbase=$(to_bytes $DEFAULT_BASE)
dend=$((dbase + $(to_bytes $DEFAULT_SIZE)))

bad() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# check VAR VALUE LOW HIGH EXPECT_LINE(1/0) [OTHER=VALUE...]: run t-basic with VAR=VALUE, expect
# success, every printed block address in [LOW, HIGH), and one complaint line or none.
check() {
	var=$1 val=$2 lo=$3 hi=$4 expect_line=$5
	shift 5
	run_env "$var=$val" "$@" -- "$p" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	if [ $rc -ne 0 ]; then
		bad "$var=$val: exit status $rc, expected 0; stderr: $(head -3 "$TMPD/err")"
		return
	fi
	n=$(grep -c "^libcontig: $var=\"$val\"" "$TMPD/err")
	if [ "$expect_line" = 1 ] && [ "$n" -ne 1 ]; then
		bad "$var=$val: expected one line 'libcontig: $var=\"$val\" …' on stderr, got $n; stderr: $(head -5 "$TMPD/err")"
		return
	fi
	if [ "$expect_line" = 0 ] && [ -s "$TMPD/err" ]; then
		bad "$var=$val is a good value, yet stderr has: $(head -3 "$TMPD/err")"
		return
	fi
	[ "$(wc -l <"$TMPD/out")" -ge 6 ] || { bad "$var=$val: t-basic printed too little"; return; }
	while read -r a; do
		if ! in_range "$a" "$lo" "$hi"; then
			bad "$var=$val: block $a outside [$(hex "$lo"), $(hex "$hi"))"
			return
		fi
	done <"$TMPD/out"
	echo "ok: $var=$val: $(head -1 "$TMPD/err")"
	other=$(grep -v "^libcontig: $var=\"$val\"" "$TMPD/err" | head -3)
	[ -z "$other" ] || echo "   (other stderr lines: $other)"
}

check CONTIG_SIZE 12Q "$dbase" "$dend" 1
check CONTIG_SIZE 0x "$dbase" "$dend" 1
check CONTIG_BASE zzz "$dbase" "$dend" 1
check CONTIG_BASE 0xffff800000000000 "$dbase" "$dend" 1      # kernel half, non-canonical
check CONTIG_BASE 0x800000000000 "$dbase" "$dend" 1          # just past the user address space

# A base that is fine but whose range runs past the user address space: either the base is
# refused (default range) or the size is cut to fit (range below 0x7fffffff0000); either way one
# line says so.
beyond() {   # VAR=VALUE...
	run_env "$@" -- "$p" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	[ $rc -eq 0 ] || { bad "$*: exit status $rc, expected 0"; return; }
	ub=$((0x7fff00000000))
	if [ "$(grep -c '^libcontig: CONTIG_BASE="0x7fff00000000"' "$TMPD/err")" -eq 1 ]; then
		lo=$dbase hi=$dend
	elif [ "$(grep -c '^libcontig: CONTIG_SIZE="' "$TMPD/err")" -eq 1 ]; then
		lo=$ub hi=$((0x7fffffff0000))
	else
		bad "$*: expected one line naming CONTIG_BASE or CONTIG_SIZE; stderr: $(head -3 "$TMPD/err")"
		return
	fi
	while read -r a; do
		in_range "$a" "$lo" "$hi" || { bad "$*: block $a outside [$(hex "$lo"), $(hex "$hi"))"; return; }
	done <"$TMPD/out"
	echo "ok: $*: $(head -1 "$TMPD/err")"
}
beyond CONTIG_BASE=0x7fff00000000
beyond CONTIG_BASE=0x7fff00000000 CONTIG_SIZE=64G
ub=$((0xf800001234))
check CONTIG_BASE 0xf800001234 "$ub" $((ub + dend - dbase)) 1  # unaligned: rounded up
check CONTIG_MODE bogus "$dbase" "$dend" 1

# Good values: honoured, and nothing said.
gb=$((0x100000000000))
check CONTIG_BASE 0x100000000000 "$gb" $((gb + (4 << 30))) 0 CONTIG_SIZE=4G
check CONTIG_SIZE 1073741824 "$dbase" $((dbase + (1 << 30))) 0
check CONTIG_SIZE 512M "$dbase" $((dbase + (512 << 20))) 0
for m in reserve lazy auto; do
	check CONTIG_MODE $m "$dbase" "$dend" 0
done
[ $failures -eq 0 ] || fail "$failures environment case(s) wrong"
