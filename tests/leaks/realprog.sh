#!/bin/sh
# realprog.sh - real Debian programs under CONTIG_LEAKS=error, with the stack side's two checks
# that leaks.sh (the scan's test) leaves out: stdout byte for byte the same as without the
# library, and the exit status the program's own with no report at all. Programs: python3 with
# PYTHONMALLOC=malloc (every object a malloc block: the allocation stacks are captured for ~100k
# blocks), sqlite3 on the scripted workload, git log --stat on a repository made here, awk
# aggregating 200k lines. A program that is missing is skipped, not failed.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"

for v in $(env | sed -n 's/^\(CONTIG_[A-Z_]*\)=.*/\1/p'); do
	case $v in CONTIG_TEST_*) ;; *) unset "$v" ;; esac
done
unset PYTHONMALLOC

py=$(command -v python3 || :)
[ -x /usr/bin/python3 ] && py=/usr/bin/python3       # not a wrapper script (pyenv shims)
mkdir "$TMPD/in" "$TMPD/repo"
seq 1 200000 | awk '{ print ($1 * 7919) % 100003, $1 }' >"$TMPD/in/data.txt"
if command -v git >/dev/null; then
	git -C "$TMPD/repo" init -q
	for i in 1 2 3 4 5; do
		echo "line $i" >>"$TMPD/repo/f.txt"
		git -C "$TMPD/repo" add f.txt
		git -C "$TMPD/repo" -c user.name=t -c user.email=t@example.org commit -q -m "commit $i"
	done
fi

ran=0 failures=0
check() {   # NAME CMD (sh -c, in $TMPD/in)
	(cd "$TMPD/in" && timeout -k 5 "$CONTIG_TEST_TIMEOUT" sh -c "$2") >"$TMPD/plain.out" 2>/dev/null
	prc=$?
	(cd "$TMPD/in" && LD_PRELOAD="$LIBCONTIG" CONTIG_LEAKS=error timeout -k 5 "$CONTIG_TEST_TIMEOUT" sh -c "$2") \
		>"$TMPD/leak.out" 2>"$TMPD/leak.err"
	rc=$?
	ran=$((ran + 1))
	why=""
	[ "$rc" -eq "$prc" ] || why="status $rc, $prc without the library"
	grep -q 'leak of\|SUMMARY' "$TMPD/leak.err" && why="${why:+$why; }a leak report"
	cmp -s "$TMPD/plain.out" "$TMPD/leak.out" || why="${why:+$why; }stdout differs"
	[ -s "$TMPD/plain.out" ] || why="${why:+$why; }no output at all (the check would be empty)"
	if [ -n "$why" ]; then
		echo "FAIL: $1: $why"
		sed 's/^/  err: /' "$TMPD/leak.err" | head -15
		failures=$((failures + 1))
	else
		echo "ok: $1: $(wc -c <"$TMPD/leak.out") bytes of stdout identical, status $rc, no report"
	fi
}

[ -n "$py" ] && check "python3 PYTHONMALLOC=malloc" \
	"PYTHONMALLOC=malloc $py -c 'import json, re; d = {str(i): [i] * (i % 7) for i in range(20000)}; print(len(json.dumps(d)), len(re.findall(\"[0-9]+\", json.dumps(d))))'"
command -v sqlite3 >/dev/null && check sqlite3 "sqlite3 :memory: <'$TESTS_SRCDIR/preload/sqlite-workload.sql'"
command -v git >/dev/null && check "git log" "git -C '$TMPD/repo' log --stat --format='%s %an'"
check awk "awk '{ s[\$1 % 1000] += \$2 } END { for (k in s) t += s[k]; print length(s), t }' data.txt"
[ "$ran" -gt 0 ] || skip "none of the programs is installed"
[ "$failures" -eq 0 ] || fail "$failures of $ran programs"
echo "PASS: $ran programs"
