/* corpus.h - helpers for the seeded leak corpus: each program's truth is in its header comment
 * (EXPECT, STACK, BUILD lines read by corpus.sh). */
#ifndef CORPUS_H
#define CORPUS_H
#include <stdint.h>
#include <string.h>

#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))   /* no .constprop/.isra copies: names stay */
#endif
/* Keep the compiler from dropping p or turning a call into a tail call. */
#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

/* Overwrite the dead stack below the caller and the scratch registers, so that a stale copy of
 * a lost pointer does not make a conservative scan call the block reachable. */
static NOINLINE void scrub_stack(void)
{
	volatile char buf[64 * 1024];
	memset((char *)buf, 0, sizeof buf);
	KEEP(buf);
}
#endif
