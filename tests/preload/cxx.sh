#!/bin/sh
# cxx.sh - C++ containers, exceptions, over-aligned, sized and nothrow new in range.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"
run_helper t-cxx
