#!/bin/sh
# cgroup.sh - SPEC CONTIG_LIMIT=cgroup: in a real memory cgroup limited to 256 MiB (v1
# memory.limit_in_bytes or v2 memory.max, whichever this machine has), a program that allocates
# and touches 1 MiB blocks until malloc fails must get NULL/ENOMEM and exit 0, not be OOM-killed
# (137), and must have used at most the limit. Needs root and the memory controller (else 77).
# The cgroup is removed afterwards.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

[ "$(id -u)" = 0 ] || skip "creating a memory cgroup needs root"
t=$(prog t-limit)
name="contig-test-$$"
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	grep -qw memory /sys/fs/cgroup/cgroup.controllers || skip "cgroup v2 without the memory controller"
	# our own cgroup's parent must delegate memory; use a child of the root
	cg=/sys/fs/cgroup/$name
	echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || :
	mkdir "$cg" 2>/dev/null || skip "cannot create $cg"
	echo $((256 << 20)) >"$cg/memory.max" || { rmdir "$cg"; skip "cannot set memory.max"; }
	echo 0 >"$cg/memory.swap.max" 2>/dev/null || :
	procs=$cg/cgroup.procs
elif [ -d /sys/fs/cgroup/memory ] && [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
	cg=/sys/fs/cgroup/memory/$name
	mkdir "$cg" 2>/dev/null || skip "cannot create $cg"
	echo $((256 << 20)) >"$cg/memory.limit_in_bytes" || { rmdir "$cg"; skip "cannot set memory.limit_in_bytes"; }
	echo $((256 << 20)) >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null || :
	procs=$cg/tasks
else
	skip "no memory cgroup controller mounted"
fi
cleanup() {
	# move anything left back out, then remove the cgroup
	if [ -f "$cg/cgroup.procs" ]; then
		for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	fi
	sleep 0.2
	rmdir "$cg" 2>/dev/null || echo "warning: could not remove $cg"
	rm -rf "$TMPD"
}
trap cleanup EXIT

# run_in_cgroup [VAR=VALUE...] CMD...: a shell that joins the cgroup, then execs CMD.
run_in_cgroup() {
	run sh -c 'echo $$ >"$0" && exec "$@"' "$procs" "$@"
}

run_in_cgroup env CONTIG_LIMIT=cgroup CONTIG_VERBOSE=1 "$t" 0
case $rc in
0) cat "$TMPD/out" ;;
137) bad "CONTIG_LIMIT=cgroup: the program was OOM-killed (status 137) instead of getting ENOMEM"; show ;;
*) bad "CONTIG_LIMIT=cgroup: exit status $rc"; show ;;
esac
grep '^libcontig: CONTIG_LIMIT=cgroup' "$TMPD/err"
grep -q "^libcontig: CONTIG_LIMIT=cgroup: .*$name/memory\.\(max\|limit_in_bytes\) is 256\.0 MiB; heap limit" "$TMPD/err" ||
	{ bad "CONTIG_VERBOSE=1 does not name the cgroup's limit file and the heap limit"; show; }
mib=$(sed -n 's/^t-limit: \([0-9]*\) MiB allocated.*/\1/p' "$TMPD/out")
[ -n "$mib" ] && [ "$mib" -ge 128 ] && [ "$mib" -le 256 ] ||
	bad "CONTIG_LIMIT=cgroup: malloc failed after ${mib:-?} MiB in a 256 MiB cgroup (want 128..256)"
finish
