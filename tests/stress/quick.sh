#!/bin/sh
# quick.sh - the `make check` form of the stress run: every phase, about 10 s in all.
exec sh "${TESTS_SRCDIR:-$(dirname "$0")/..}/stress/stress.sh" --quick
