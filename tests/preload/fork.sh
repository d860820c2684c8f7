#!/bin/sh
# fork.sh - fork while another thread allocates; every child can allocate.
. "${TESTS_SRCDIR:-$(dirname "$0")}/lib.sh"
run_helper t-fork
