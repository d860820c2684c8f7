#!/bin/sh
# realloc.sh - realloc keeps the data across all size ranges.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"
run_helper t-realloc
