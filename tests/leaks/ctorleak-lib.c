/* ctorleak-lib.c - a shared library whose constructor leaks 55 bytes (ctor_leak, called by
 * ctor_init). Linked by ctorleak-main.c as a dependency, its constructor runs before
 * libcontig's own: the capture must already work then. Truth, checked by corpus.sh: direct
 * 55/1, frames #0 ctor_leak #1 ctor_init. */
#include <stdlib.h>
#include "corpus.h"

static NOINLINE void ctor_leak(void) { char *p = malloc(55); KEEP(p); }

__attribute__((constructor)) static void ctor_init(void) { ctor_leak(); scrub_stack(); }

int ctorleak_value(void) { return 7; }
