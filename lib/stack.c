/* stack.c - allocation stacks: capture, deduplication, symbolisation (see stack.h). */
#include "internal.h"
#include "stack.h"
