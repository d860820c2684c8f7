#!/bin/sh
# cgroup-parse.sh - SPEC CONTIG_LIMIT=cgroup reads memory.max of the process's own cgroup, found
# through /proc/self/cgroup and /proc/self/mountinfo, and keeps the tightest of it and its
# ancestors'. Both files are replaced by made-up ones in a private mount namespace (bind mounts
# over /proc/PID/...), over a made-up cgroup2 tree: the cgroup2 mount comes after 300 long
# overlay lines (36 KiB: a container host's mountinfo; only the first 16 KiB used to be read,
# and the limit was lost), and a parent's limit below the leaf's binds. Needs root and
# unshare(1) (else 77).
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/safety/common.sh"

[ "$(id -u)" = 0 ] || skip "bind mounts over /proc need root"
command -v unshare >/dev/null 2>&1 || skip "no unshare(1)"
unshare -m --propagation private true 2>/dev/null || skip "cannot make a private mount namespace here"
t=$(command -v true)

root="$TMPD/root"
mkdir -p "$root/a/b"
echo max >"$root/memory.max" 2>/dev/null || :
echo 0::/a/b >"$TMPD/cgroup"
i=0
: >"$TMPD/mountinfo"
while [ $i -lt 300 ]; do
	echo "$((100 + i)) 25 0:$((50 + i)) / /var/lib/containers/overlay/$(printf '%064d' $i)/merged rw,relatime shared:$i - overlay overlay rw,lowerdir=/var/lib/containers/overlay/l/$(printf '%040d' $i),upperdir=/u,workdir=/w" >>"$TMPD/mountinfo"
	i=$((i + 1))
done
echo "30 25 0:26 / $root rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate" >>"$TMPD/mountinfo"
[ "$(wc -c <"$TMPD/mountinfo")" -gt 32768 ] || fail "the made-up mountinfo is too short to test anything"

# limit_of LEAF PARENT: the heap limit CONTIG_VERBOSE=1 reports with those memory.max values
limit_of() {
	echo "$1" >"$root/a/b/memory.max"
	echo "$2" >"$root/a/memory.max"
	CONTIG_LIMIT=cgroup CONTIG_VERBOSE=1 unshare -m --propagation private sh -c \
		'mount --bind "$1" /proc/$$/cgroup && mount --bind "$2" /proc/$$/mountinfo && exec env LD_PRELOAD="$3" "$4"' \
		sh "$TMPD/cgroup" "$TMPD/mountinfo" "$LIBCONTIG" "$t" >"$TMPD/out" 2>"$TMPD/err"
	sed -n 's/^libcontig: CONTIG_LIMIT=cgroup: .*heap limit \([0-9.]* [KMG]iB\).*/\1/p' "$TMPD/err" | head -1
}

got=$(limit_of 268435456 max)
[ "$got" = "224.0 MiB" ] || { bad "memory.max 256 MiB after 36 KiB of mountinfo: heap limit '$got', want 224.0 MiB"; show; }
got=$(limit_of max 134217728)
[ "$got" = "112.0 MiB" ] || { bad "the parent's memory.max 128 MiB: heap limit '$got', want 112.0 MiB"; show; }
got=$(limit_of 268435456 134217728)
[ "$got" = "112.0 MiB" ] || { bad "leaf 256 MiB under a 128 MiB parent: heap limit '$got', want 112.0 MiB"; show; }
echo "ok: CONTIG_LIMIT=cgroup behind 300 mountinfo lines, and the tightest ancestor"
finish
