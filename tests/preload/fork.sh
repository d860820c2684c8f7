#!/bin/sh
# fork.sh - fork while another thread allocates; every child can allocate.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"
run_helper t-fork
