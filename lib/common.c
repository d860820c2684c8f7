/* common.c - the global state every layer reads: the range's geometry, the configuration, and
 * the per-thread count of library locks held. */
#include "common.h"

contig_global_t G;
__thread int locks_held __attribute__((tls_model("initial-exec")));
__thread int limit_refused __attribute__((tls_model("initial-exec")));
__thread int limit_retry __attribute__((tls_model("initial-exec")));
