#!/bin/sh
# python.sh - pyflakes over the launcher (scripts/contig.py), scripts/bench and the tools tests (tests/tools/*.py):
# unused imports and variables, undefined names, redefinitions, format strings that do not
# match their arguments. python.sh [SRCDIR]; exit 0 clean, 1 on findings, 77 when pyflakes is
# not installed (Debian: python3-pyflakes; scripts/setup installs it). Called by `make lint`.
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${1:-$here/../..}" && pwd)
for py in /usr/bin/python3 python3; do
	if command -v "$py" >/dev/null 2>&1 && "$py" -m pyflakes --version >/dev/null 2>&1; then
		echo "== pyflakes ($("$py" -m pyflakes --version 2>&1 | head -1))"
		if "$py" -m pyflakes "$src/scripts/contig.py" "$src/scripts/bench" "$src"/tests/tools/*.py; then
			echo "pyflakes: clean"
			exit 0
		fi
		echo "pyflakes: findings above"
		exit 1
	fi
done
echo "pyflakes: not installed (python3-pyflakes), skipped"
exit 77
