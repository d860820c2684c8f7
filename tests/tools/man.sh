#!/bin/sh
# man.sh - the man pages contig(1) and libcontig(3) lint clean with mandoc -T lint, or, without
# mandoc, format without warnings with man --warnings; skipped when neither is installed.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/tools/common.sh"

pages="$TOP_SRCDIR/docs/contig.1 $TOP_SRCDIR/docs/libcontig.3"
for p in $pages; do
	[ -f "$p" ] || fail "$p missing"
done
# As root on Debian, install mandoc when neither tool is there (as tests/lib.sh's need_cmd does).
if ! command -v mandoc >/dev/null 2>&1 && ! command -v man >/dev/null 2>&1 &&
   [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q mandoc >"$TMPD/apt.log" 2>&1 ||
		{ DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$TMPD/apt.log" 2>&1 &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -q mandoc >>"$TMPD/apt.log" 2>&1; } || :
fi
if command -v mandoc >/dev/null 2>&1; then
	for p in $pages; do
		mandoc -T lint -W style "$p" >"$TMPD/lint" 2>&1
		# mandoc names the system's own man pages in SEE ALSO checks on some versions: not ours.
		grep -v 'referenced manual not found' "$TMPD/lint" >"$TMPD/lint2"
		if [ -s "$TMPD/lint2" ]; then
			bad "mandoc -T lint $(basename "$p"): $(cat "$TMPD/lint2")"
		else
			ok "mandoc -T lint $(basename "$p"): clean"
		fi
	done
elif command -v man >/dev/null 2>&1 && man --help 2>&1 | grep -q -- --warnings; then
	for p in $pages; do
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$p" >/dev/null 2>"$TMPD/warn"
		if [ -s "$TMPD/warn" ]; then
			bad "man --warnings $(basename "$p"): $(cat "$TMPD/warn")"
		else
			ok "man --warnings $(basename "$p"): clean"
		fi
	done
else
	skip "neither mandoc nor man (man-db) is installed"
fi

# Every CONTIG_* variable the library reads is documented in libcontig(3), every option of the
# launcher in contig(1).
for v in $(grep -o 'env_get(envp, "CONTIG_[A-Z_]*"' "$TOP_SRCDIR/lib/config.c" | grep -o 'CONTIG_[A-Z_]*' | sort -u); do
	grep -q "^\.B $v\$" "$TOP_SRCDIR/docs/libcontig.3" || bad "libcontig(3) does not describe $v"
done
for o in base size mode limit on-collision fallback purge-ms mmap stats stats-file leaks leaks-suppress verbose png text watch interval all; do
	o_roff=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
	grep -q -- "\\\\-\\\\-$o_roff" "$TOP_SRCDIR/docs/contig.1" || bad "contig(1) does not describe --$o"
done
finish
