#!/bin/sh
# calloc.sh - calloc zeroes reused memory (small, medium, large).
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"
run_helper t-calloc
