#!/bin/sh
# info.sh - `contig info` says what the library would do here: the configuration, RLIMIT_AS, the
# cgroup limit, the mode auto picks (the whole range with no limit, part of it under ulimit -v),
# whether the range is free, and the library it found; options and CONTIG_* change the answer.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/tools/common.sh"
find_python

if expect_status 0 "contig info" contig info; then
	for w in RLIMIT_AS "memory cgroup" "CONTIG_MODE" "auto" "0xf800000000" "$LIBCONTIG" "free"; do
		grep -q -- "$w" "$TMPD/out" || bad "contig info: '$w' not in its output"
	done
	grep -q "measured: .*reserved" "$TMPD/out" || bad "contig info: no measured reservation"
	ok "contig info"
	sed 's/^/    /' "$TMPD/out"
fi

# Under an address-space limit far below the range, auto reserves part and grows lazily.
if expect_status 0 "ulimit -v 1048576; contig info" sh -c "ulimit -v 1048576 && CONTIG_LIB='$LIBCONTIG' '$PY' '$CONTIG' info"; then
	grep -q "RLIMIT_AS .*1.0 GiB" "$TMPD/out" || bad "ulimit -v 1048576: RLIMIT_AS 1 GiB not shown"
	grep -q "headroom 896.0 MiB" "$TMPD/out" || bad "ulimit -v 1048576: the 896 MiB headroom not shown"
	grep -q "range is cut to 8.0 GiB" "$TMPD/out" || bad "ulimit -v 1048576: the range cut to 8 GiB not said"
	grep -q "grows lazily" "$TMPD/out" || bad "ulimit -v 1048576: lazy growth beyond not said"
	grep -q "measured: .*reserved [0-9.]* MiB of 8.0 GiB" "$TMPD/out" ||
		bad "ulimit -v 1048576: no partial reservation measured: $(grep measured "$TMPD/out")"
	ok "under ulimit -v 1048576: $(grep measured "$TMPD/out")"
fi

# Options and the environment are the configuration it explains; bad values are flagged.
if expect_status 0 "contig info --mode lazy --size 4G" contig info --mode lazy --size 4G; then
	grep -q "CONTIG_MODE *lazy *environment" "$TMPD/out" || bad "info --mode lazy: mode not shown as lazy"
	grep -q "CONTIG_SIZE *4.0 GiB" "$TMPD/out" || bad "info --size 4G: size not shown"
	grep -q "measured: .*reserved nothing (mode lazy)" "$TMPD/out" || bad "info --mode lazy: $(grep measured "$TMPD/out")"
fi
if expect_status 0 "CONTIG_SIZE=12Q contig info" env CONTIG_SIZE=12Q CONTIG_LIB="$LIBCONTIG" "$PY" "$CONTIG" info; then
	grep -q 'CONTIG_SIZE="12Q" is not a size' "$TMPD/out" || bad "CONTIG_SIZE=12Q: not flagged"
	grep -q 'library says: libcontig: CONTIG_SIZE="12Q"' "$TMPD/out" || bad "CONTIG_SIZE=12Q: the library's own line not shown"
fi

finish
