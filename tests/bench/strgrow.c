/* strgrow: many strings growing by realloc up to 200 KB.  256 strings are
 * live at a time and appended to in random order, so growths interleave and
 * a string's neighbour is usually another growing string.  Each string gets
 * a target length log-uniform in 16 B..200 KB and appends of 1..(len/4+32)
 * bytes (a builder's appends grow with the text); strings with even ids
 * realloc to the exact length on every append (a naive builder), odd ones
 * double their capacity when full.  A string that reaches its target is
 * hashed (sampled), freed and replaced.  40000 strings at scale 1, one
 * thread.  Covers the small-to-medium range that realloc (256 KiB..16 MiB)
 * does not.
 * Usage: strgrow [scale]   Prints one deterministic checksum line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIVE 256
#define MAXLEN (200 * 1000)

static uint64_t rng = 0x452821e638d01377ull;
static inline uint64_t rnd(void)
{
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return rng;
}

typedef struct {
	char *p;
	size_t len, cap, target;  /* bytes */
	int id;
} str_t;

static uint64_t h = 0xcbf29ce484222325ull;
static long reallocs;

static void start(str_t *s, int id)
{
	/* target log-uniform in 16 B..256 KiB, capped at MAXLEN */
	unsigned bits = 4 + (unsigned)(rnd() % 14);          /* 2^4 .. 2^17 */
	size_t t = ((size_t)1 << bits) + rnd() % ((size_t)1 << bits);
	s->target = t > MAXLEN ? MAXLEN : t;
	s->id = id;
	s->len = 0;
	s->cap = 8;
	s->p = malloc(s->cap);
	if (!s->p) { fprintf(stderr, "strgrow: malloc failed\n"); exit(2); }
}

static void finish(str_t *s)
{
	for (size_t i = 0; i < s->len; i += 997) h = (h ^ (unsigned char)s->p[i]) * 0x100000001b3ull;
	h = (h ^ s->len ^ (unsigned char)s->p[s->len - 1]) * 0x100000001b3ull;
	free(s->p);
	s->p = NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	int nstr = (int)(40000 * scale);
	if (nstr < LIVE) nstr = LIVE;
	str_t s[LIVE];
	int next = 0, done = 0;
	for (int i = 0; i < LIVE; i++) start(&s[i], next++);
	while (done < nstr) {
		uint64_t r = rnd();
		str_t *x = &s[(r >> 32) % LIVE];
		if (!x->p) continue;
		size_t chunk = 1 + (size_t)(r % (x->len / 4 + 32));
		size_t need = x->len + chunk;
		if (need > x->cap) {
			size_t nc = (x->id & 1) ? 2 * x->cap : need;
			if (nc < need) nc = need;
			char *q = realloc(x->p, nc);
			if (!q) { fprintf(stderr, "strgrow: realloc(%zu) failed\n", nc); return 2; }
			x->p = q;
			x->cap = nc;
			reallocs++;
		}
		memset(x->p + x->len, 'a' + (int)((r >> 24) % 26), chunk);
		x->len = need;
		if (x->len >= x->target) {
			finish(x);
			done++;
			if (next < nstr) start(x, next++);
		}
	}
	printf("strgrow strings=%d reallocs=%ld checksum=%016llx\n", nstr, reallocs, (unsigned long long)h);
	return 0;
}
