/* init.h - the one initialisation (init.c). Only the entry layers (alloc, mmap, the API) call it:
 * everything below them runs after it. */
#ifndef CONTIG_INIT_H
#define CONTIG_INIT_H

#include "common.h"

HIDDEN void contig_init_slow(void);
static inline void contig_ensure_init(void)
{
	if (unlikely(atomic_load_explicit(&G.state, memory_order_acquire) != 2))
		contig_init_slow();
}

#endif
