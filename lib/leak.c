/* leak.c - leak checking: allocation records, the reachability scan, suppressions, report. */
#include "internal.h"
#include "leak.h"
#include "stack.h"
