#!/bin/sh
# lint.sh - cppcheck and clang-tidy over lib/ and preload/ with the checks of tests/lint/README.
#   lint.sh [SRCDIR [BUILDDIR]]   SRCDIR: top of the source tree (default: this script's ../..);
#                                 BUILDDIR: a configured build tree holding config.h (default:
#                                 SRCDIR, else a throw-away configure in a temp dir)
# Exit 0 when both run clean (after the suppressions in cppcheck.supp and tidy.supp, each with
# its reason), 1 on any finding, 77 when neither tool is installed. CI calls it through `make lint`.
here=$(cd "$(dirname "$0")" && pwd)
src=${1:-$here/../..}
src=$(cd "$src" && pwd)
bld=${2:-$src}
tmp=
cleanup() { [ -n "$tmp" ] && rm -rf "$tmp"; }
trap cleanup EXIT
if [ ! -f "$bld/config.h" ]; then
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/contig-lint.XXXXXX") || exit 99
	(cd "$tmp" && "$src/configure" -q >/dev/null) || { echo "lint: configure failed"; exit 99; }
	bld=$tmp
fi
bld=$(cd "$bld" && pwd)
CPPCHECK=${CPPCHECK:-cppcheck}
CLANG_TIDY=${CLANG_TIDY:-clang-tidy}
have_cppcheck=0 have_tidy=0
command -v "$CPPCHECK" >/dev/null 2>&1 && have_cppcheck=1
command -v "$CLANG_TIDY" >/dev/null 2>&1 && have_tidy=1
[ $have_cppcheck = 1 ] || [ $have_tidy = 1 ] || { echo "lint: neither cppcheck nor clang-tidy installed"; exit 77; }

cd "$src" || exit 99
files="lib/*.c preload/*.c"
defs="-D_GNU_SOURCE -Ilib -I$bld"
failures=0

if [ $have_cppcheck = 1 ]; then
	echo "== cppcheck ($($CPPCHECK --version))"
	# warning: undefined behaviour and likely bugs; style: dead code, conditions always
	# true/false, redundant assignments; portability and performance. Not `information`
	# (missing system headers) and not `unusedFunction` (the exported API looks unused).
	if ! $CPPCHECK -q --std=c11 --enable=warning,style,portability,performance \
		--error-exitcode=1 --inline-suppr --suppressions-list="$here/cppcheck.supp" \
		--template='{file}:{line}: {severity}: {message} [{id}]' $defs $files; then
		failures=$((failures + 1))
	fi
else
	echo "== cppcheck: not installed, skipped"
fi

if [ $have_tidy = 1 ]; then
	checks=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$here/tidy-checks" | tr -d ' \t' | paste -sd, -)
	echo "== clang-tidy ($($CLANG_TIDY --version | sed -n 's/.*version \([0-9.]*\).*/\1/p' | head -1))"
	out=$(mktemp "${TMPDIR:-/tmp}/contig-tidy.XXXXXX")
	for f in $files; do
		$CLANG_TIDY -quiet --checks="$checks" "$f" -- -std=gnu11 $defs -pthread 2>/dev/null
	done > "$out"
	# warnings as "file:line:col: warning: message [check]", paths made relative to SRCDIR
	found=$(sed -n -e "s#^$src/##" -e 's#^\([^ :]*\):\([0-9]*\):[0-9]*: \(warning\|error\): \(.*\) \[\([^]]*\)\]$#\1|\2|\5|\4#p' "$out" | sort -u)
	rm -f "$out"
	n=0
	echo "$found" | while IFS='|' read -r file line check msg; do
		[ -n "$file" ] || continue
		sup=0
		while IFS='|' read -r sfile scheck smsg; do
			case $sfile in ''|'#'*) continue ;; esac
			if [ "$sfile" = "$file" ] && [ "$scheck" = "$check" ]; then
				case $msg in *"$smsg"*) sup=1; break ;; esac
			fi
		done < "$here/tidy.supp"
		[ $sup = 1 ] || echo "$file:$line: $msg [$check]"
	done > "${TMPDIR:-/tmp}/contig-tidy-left.$$"
	n=$(wc -l < "${TMPDIR:-/tmp}/contig-tidy-left.$$")
	cat "${TMPDIR:-/tmp}/contig-tidy-left.$$"
	rm -f "${TMPDIR:-/tmp}/contig-tidy-left.$$"
	[ "$n" -eq 0 ] || failures=$((failures + 1))
else
	echo "== clang-tidy: not installed, skipped"
fi

if [ $failures -eq 0 ]; then echo "lint: clean"; exit 0; fi
echo "lint: findings above (suppress a false positive in tests/lint/*.supp, with its reason)"
exit 1
