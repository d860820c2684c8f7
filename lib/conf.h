/* conf.h - the CONTIG_* configuration, read once from the environment at initialisation (config.c). */
#ifndef CONTIG_CONF_H
#define CONTIG_CONF_H

#include <stddef.h>
#include <stdint.h>
#include "contig.h"

enum { MODE_RESERVE = CONTIG_MODE_RESERVE, MODE_LAZY = CONTIG_MODE_LAZY, MODE_AUTO = CONTIG_MODE_AUTO };
enum { COLL_SKIP = 0, COLL_ABORT = 1 };
enum { STATS_OFF = 0, STATS_TEXT = 1, STATS_JSON = 2 };
enum { LEAKS_OFF = 0, LEAKS_REPORT = 1, LEAKS_ERROR = 2 };
enum { MMAP_NONE = 0, MMAP_RW = 1, MMAP_ALL = 2 };
enum { LIMIT_NONE = 0, LIMIT_SIZE = 1, LIMIT_CGROUP = 2 };

typedef struct config {
	uintptr_t base;                 /* first address of the range */
	size_t size;                    /* bytes */
	int mode;                       /* MODE_* asked for */
	int on_collision;               /* COLL_* */
	int fallback_system;            /* 1: serve from outside the range when it cannot */
	int limit_kind;                 /* LIMIT_* */
	size_t limit;                   /* bytes (LIMIT_SIZE) */
	uint32_t purge_ms;              /* delay before freed pages go back to the OS */
	int mmap;                       /* MMAP_* */
	int stats;                      /* STATS_* */
	char stats_file[256];           /* CONTIG_STATS_FILE or "" */
	char map_file[256];             /* CONTIG_MAP_FILE: page map dump at exit (pagemap.c), or "" */
	int leaks;                      /* LEAKS_* */
	char leaks_suppress[256];       /* CONTIG_LEAKS_SUPPRESS or "" */
	int verbose;                    /* CONTIG_VERBOSE */
	int check_maps;                 /* CONTIG_CHECK_MAPS: read /proc/self/maps before using reserved pages */
} config_t;

__attribute__((visibility("hidden"))) void config_defaults(config_t *c);
__attribute__((visibility("hidden"))) void config_parse(config_t *c, char **envp);
__attribute__((visibility("hidden"))) int config_parse_size(const char *s, size_t *out);
__attribute__((visibility("hidden"))) int config_parse_addr(const char *s, uintptr_t *out);

#endif
