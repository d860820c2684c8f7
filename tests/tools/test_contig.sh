#!/bin/sh
# test_contig.sh - runs the launcher's unit tests (tools/test_contig.py, unittest) under the
# python3 the launcher is installed for, with the library and tools/t-pagemap of this build.
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/tools/common.sh"
LIBCONTIG=$LIBCONTIG TESTS_BUILDDIR=$TESTS_BUILDDIR "$PY" -W error::ResourceWarning "$TESTS_SRCDIR/tools/test_contig.py" -v
