#!/bin/sh
# layers.sh - the core's layering, checked: every #include "..." in lib/ and preload/ must point to
# a header of the same layer or a lower one, as the layer table in docs/design.md says, and every
# source file there must be placed in that table.
set -u
top=${TESTS_SRCDIR:+$TESTS_SRCDIR/..}
top=${top:-$(cd "$(dirname "$0")/../.." && pwd)}
table="$top/docs/design.md"
[ -f "$table" ] || { echo "layers: $table missing"; exit 1; }
# "file layer" pairs from the rows "| N | name | `a.h` `a.c` ... | ... |" after the marker
pairs=$(awk '/<!-- layers:/ {on=1; next}
	on && /^\| *[0-9]+ *\|/ { split($0, c, "|"); n = c[2] + 0; f = c[4];
		while (match(f, /`[^`]+`/)) { print substr(f, RSTART + 1, RLENGTH - 2), n; f = substr(f, RSTART + RLENGTH) } }
	on && !/^\|/ && seen { exit } on && /^\|/ { seen = 1 }' "$table")
[ -n "$pairs" ] || { echo "layers: no layer table in $table"; exit 1; }
layer_of() { printf '%s\n' "$pairs" | awk -v f="$1" '$1 == f { print $2; exit }'; }
bad=0
for path in "$top"/lib/*.[ch] "$top"/preload/*.c; do
	f=$(basename "$path")
	[ "$f" = contig.h ] && continue               # the public header, below everything
	l=$(layer_of "$f")
	if [ -z "$l" ]; then echo "layers: $f is in no layer of docs/design.md"; bad=1; continue; fi
	for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$path"); do
		case $inc in config.h|contig.h) continue ;; esac   # autoconf's, the public header
		il=$(layer_of "$inc")
		if [ -z "$il" ]; then echo "layers: $f includes $inc, which is in no layer"; bad=1
		elif [ "$il" -gt "$l" ]; then echo "layers: $f (layer $l) includes $inc (layer $il): points up"; bad=1; fi
	done
done
[ $bad = 0 ] && echo "layers: $(printf '%s\n' "$pairs" | wc -l) files, every include points down or sideways"
exit $bad
