#!/bin/sh
# usage.sh - the launcher's command line: bad options and a missing command give a usage message
# on stderr and exit status 2; --help and --version work everywhere (top level, info, map).
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/tools/common.sh"

usage_error() {   # LABEL ARGS...
	_label=$1
	shift
	if expect_status 2 "$_label" contig "$@"; then
		[ -s "$TMPD/err" ] || bad "$_label: no message on stderr"
		[ ! -s "$TMPD/out" ] || bad "$_label: output on stdout: $(head -2 "$TMPD/out")"
		grep -qi 'usage\|--help' "$TMPD/err" || bad "$_label: stderr does not point to the usage: $(cat "$TMPD/err")"
		ok "$_label: status 2: $(head -1 "$TMPD/err")"
	fi
}

usage_error "no arguments"
usage_error "options but no command" --stats
usage_error "options and -- but no command" --stats --
usage_error "unknown option" --frobnicate -- true
usage_error "unknown short option" -x true
usage_error "bad mode" --mode sideways -- true
usage_error "bad size" --size 12Q -- true
usage_error "bad base" --base 0xZZ -- true
usage_error "bad limit" --limit lots -- true
usage_error "bad --stats value" --stats=xml -- true
usage_error "bad --leaks value" --leaks=loud -- true
usage_error "bad --on-collision" --on-collision ignore -- true
usage_error "missing value" --size
usage_error "value on a flag" --verbose=2 -- true
usage_error "--png outside map" --png x.png -- true
usage_error "-o outside map" -o x.png -- true
usage_error "--leaks-suppress without a file" --leaks-suppress
usage_error "map with a bad --watch" map --watch soon 1
usage_error "info with an operand" info extra
usage_error "info with a bad option" info --bogus
usage_error "map without a pid" map
usage_error "map with a non-numeric pid" map notapid
usage_error "map -- without a command" map --
usage_error "map with a bad option" map --bogus 1

want="contig $(configured_version)"
for args in "--version" "-V" "info --version" "map --version" "--stats --version"; do
	# shellcheck disable=SC2086
	if expect_status 0 "$args" contig $args; then
		got=$(cat "$TMPD/out")
		[ "$got" = "$want" ] || bad "contig $args printed '$got', want '$want'"
	fi
done
ok "--version prints '$want' everywhere"

for args in "--help" "-h" "info --help" "map --help"; do
	# shellcheck disable=SC2086
	if expect_status 0 "$args" contig $args; then
		for w in usage info map --base --size --mode --limit --stats --leaks --on-collision --png; do
			grep -q -- "$w" "$TMPD/out" || bad "contig $args: '$w' not in the help"
		done
	fi
done
ok "--help describes the options and subcommands"

# A missing library is the launcher's own failure, not a usage error.
CONTIG_LIB=/nonexistent/libcontig.so "$PY" "$CONTIG" -- true >/dev/null 2>"$TMPD/err"
rc=$?
[ $rc -eq 125 ] || bad "CONTIG_LIB pointing nowhere: status $rc, want 125"
grep -q nonexistent "$TMPD/err" || bad "CONTIG_LIB pointing nowhere: message does not name it: $(cat "$TMPD/err")"

finish
