/* testutil.c - range parsing and checks for the LD_PRELOAD test programs (see testutil.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* RTLD_DEFAULT */
#endif
#include "testutil.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uintptr_t tu_base = TU_DEFAULT_BASE;
uintptr_t tu_size = TU_DEFAULT_SIZE;

int tu_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (s == NULL || !isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);   /* base 0: 0x… hex, else decimal (a leading 0 is octal; nobody writes that) */
	if (errno != 0 || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (*end != '\0')
		return -1;
	if (shift != 0 && v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

void tu_init(void)
{
	const char *b = getenv("CONTIG_BASE");
	const char *s = getenv("CONTIG_SIZE");
	uint64_t v;

	if (b != NULL && *b != '\0') {
		if (tu_parse_size(b, &v) != 0)
			tu_fail(__FILE__, __LINE__, "cannot parse CONTIG_BASE=%s", b);
		tu_base = (uintptr_t)v;
	}
	if (s != NULL && *s != '\0') {
		if (tu_parse_size(s, &v) != 0)
			tu_fail(__FILE__, __LINE__, "cannot parse CONTIG_SIZE=%s", s);
		tu_size = (uintptr_t)v;
	}
}

int tu_in_range(uintptr_t a, size_t len)
{
	if (a < tu_base || a - tu_base >= tu_size)
		return 0;
	return len <= tu_size - (a - tu_base);
}

void tu_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL: %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	exit(1);
}

/* Word-sized pattern: fast enough to cover every byte of blocks up to hundreds of MiB. */
static uint64_t pattern_word(uint64_t seed, size_t i)
{
	return (seed ^ (i * 0x9e3779b97f4a7c15ULL)) | 1;
}

void tu_fill(void *p, size_t len, uint64_t seed)
{
	unsigned char *c = p;
	size_t words = len / 8, i;

	for (i = 0; i < words; i++) {
		uint64_t w = pattern_word(seed, i);
		memcpy(c + i * 8, &w, 8);
	}
	if (len > words * 8) {   /* the tail is a prefix of the next word, so any prefix of a block verifies */
		uint64_t w = pattern_word(seed, words);
		memcpy(c + words * 8, &w, len - words * 8);
	}
}

long tu_verify(const void *p, size_t len, uint64_t seed)
{
	const unsigned char *c = p;
	size_t words = len / 8, i;

	for (i = 0; i < words; i++) {
		uint64_t w;
		memcpy(&w, c + i * 8, 8);
		if (w != pattern_word(seed, i))
			return (long)(i * 8);
	}
	if (len > words * 8) {
		uint64_t w = pattern_word(seed, words);
		if (memcmp(c + words * 8, &w, len - words * 8) != 0)
			return (long)(words * 8);
	}
	return -1;
}

uint64_t tu_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

void tu_stats_fill(void *st, size_t size)
{
	/* contig_stats_t starts with its size (contig.h): a caller's smaller struct stays valid */
	int (*get)(void *) = (int (*)(void *))dlsym(RTLD_DEFAULT, "contig_get_stats");
	if (!get) tu_fail(__FILE__, __LINE__, "contig_get_stats not found: is the library preloaded?");
	memset(st, 0, size);
	memcpy(st, &size, sizeof size);
	if (get(st) != 0) tu_fail(__FILE__, __LINE__, "contig_get_stats failed");
}
