#!/bin/sh
# threads.sh - cross-thread frees under load, and threads exiting with live blocks.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/preload/lib.sh"
run_helper t-threads
