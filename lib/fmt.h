/* fmt.h - allocation-free formatting into caller buffers, the log lines and the one fatal path
 * (fmt.c). Usable from every layer: nothing here allocates or takes a lock. */
#ifndef CONTIG_FMT_H
#define CONTIG_FMT_H

#include "common.h"

HIDDEN NORETURN void fatal_pointer(const char *func, const void *p);
HIDDEN NORETURN void fatal_msg(const char *func, const char *msg);
HIDDEN NORETURN void fatal_corrupt(const char *func, const void *p);   /* "heap corruption at p" */
typedef struct fmtbuf { char *p; size_t left; char *start; } fmtbuf_t;
HIDDEN void fmt_init(fmtbuf_t *b, char *buf, size_t n);
HIDDEN void fmt_str(fmtbuf_t *b, const char *s);
HIDDEN void fmt_char(fmtbuf_t *b, char c);
HIDDEN void fmt_dec(fmtbuf_t *b, uint64_t v);
HIDDEN void fmt_hex(fmtbuf_t *b, uint64_t v);
HIDDEN void fmt_size(fmtbuf_t *b, uint64_t bytes);
HIDDEN size_t fmt_len(const fmtbuf_t *b);
HIDDEN void fmt_path_pid(fmtbuf_t *b, const char *pattern);   /* pattern with each %p the process ID */
HIDDEN void log_line(const char *line);      /* "libcontig: " + line + "\n" to stderr */
HIDDEN void log_verbose(const char *line);   /* the same under CONTIG_VERBOSE */
HIDDEN void report_fd_save(void);            /* at start: keep a private copy of stderr */
HIDDEN int report_fd(void);                  /* where an exit report goes, or -1 */

#endif
