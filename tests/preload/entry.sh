#!/bin/sh
# entry.sh - every malloc-family entry point returns in-range, aligned, usable memory (0 B to 256 MiB).
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"
run_helper t-entry
