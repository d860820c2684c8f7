/* t-example.c - builds docs/example.c, the API example, as a check program linked with the
 * library (not preloaded), so that `make check` compiles and runs exactly what the docs show. */
#include "../../docs/example.c"
