# Check unit tests of the core (lib/), included from tests/Makefile.am. Owned by the core authors.
