#!/bin/sh
# stress.sh - runs tests/stress/stress under LD_PRELOAD of the built library, phase by phase,
# for a set time. Not part of `make check` except as `stress.sh --quick` (about 10 s).
#   stress.sh [--quick] [SECONDS]    SECONDS (default $STRESS_SECONDS or 60) split over the phases
# Environment (set by tests/Makefile.am's AM_TESTS_ENVIRONMENT, or by hand): LIBCONTIG, the
# library; TESTS_BUILDDIR, the build tree's tests/ (holds stress/stress). Exit 0 pass, 1 fail, 77 skip.
: "${TESTS_BUILDDIR:=$(pwd)}"
: "${LIBCONTIG:=$TESTS_BUILDDIR/../preload/.libs/libcontig.so}"
secs=${STRESS_SECONDS:-60}
quick=0
for a in "$@"; do
	case $a in
	--quick) quick=1; secs=10 ;;
	[0-9]*) secs=$a ;;
	*) echo "usage: $0 [--quick] [SECONDS]" >&2; exit 2 ;;
	esac
done
prog=$TESTS_BUILDDIR/stress/stress
[ -x "$prog" ] || { echo "FAIL: $prog not built (make -C tests stress/stress)"; exit 1; }
[ -f "$LIBCONTIG" ] || { echo "FAIL: library $LIBCONTIG not built"; exit 1; }
for v in $(env | sed -n 's/^\(CONTIG_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
ulimit -c 0 2>/dev/null || :

# seconds per phase: threads 25%, handoff 15%, fork 20%, limit 15%, grow 25% (at least 1 s each)
share() { s=$((secs * $1 / 100)); [ "$s" -ge 1 ] || s=1; echo "$s"; }
jobs=8
[ "$quick" = 1 ] && jobs=4
failures=0
run() {
	echo "== $*"
	start=$(date +%s)
	env LD_PRELOAD="$LIBCONTIG" "$@"
	rc=$?
	echo "   exit $rc after $(( $(date +%s) - start )) s"
	[ "$rc" -eq 0 ] || failures=$((failures + 1))
}
t0=$(date +%s)
run "$prog" threads -t "$(share 25)" -j "$jobs"
run "$prog" handoff -t "$(share 15)" -j 4
run "$prog" fork -t "$(share 20)" -j "$jobs"
run CONTIG_LIMIT=128M "$prog" limit -t "$(share 15)" -j 4
run CONTIG_LIMIT=64M CONTIG_PURGE_MS=1000 "$prog" limit-peak
run CONTIG_MODE=lazy "$prog" grow -t "$(share 25)" -j "$jobs"
echo "stress: $(( $(date +%s) - t0 )) s in all, $failures phase(s) failed"
[ "$failures" -eq 0 ] || exit 1
exit 0
