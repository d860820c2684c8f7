#!/bin/sh
# errors.sh - overflow and impossible sizes give NULL/ENOMEM, bad alignments EINVAL, malloc(0) unique, free keeps errno.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"
run_helper t-errors
