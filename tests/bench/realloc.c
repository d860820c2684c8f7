/* realloc: string-builder growth of many buffers.
 * 128 buffers at scale 1, 8 of them live at a time and appended to round-robin,
 * so growths interleave.  Even buffers grow geometrically (capacity x1.5 when
 * full, appends of 1..256 B) to a target of 1..16 MiB; odd buffers realloc to
 * exactly the new length on every append (appends of 1..8192 B) to a target
 * of 256 KiB..2 MiB, which rewards growing in place.
 * Usage: realloc [scale]   Prints one deterministic checksum line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIVE 8

static uint64_t rng = 0x853c49e6748fea9bull;
static inline uint64_t rnd(void)
{
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return rng;
}

typedef struct {
	unsigned char *p;
	size_t len, cap, target;  /* bytes */
	int exact;                /* realloc to the exact length every append */
	int id;
} buf_t;

static uint64_t h = 0xcbf29ce484222325ull;

static void start(buf_t *b, int id)
{
	b->id = id;
	b->exact = id & 1;
	if (b->exact) b->target = (256u << 10) + rnd() % (1792u << 10);
	else b->target = (1u << 20) + rnd() % (15u << 20);
	b->len = 0;
	b->cap = 16;
	b->p = malloc(16);
	if (!b->p) { fprintf(stderr, "realloc: malloc failed\n"); exit(2); }
}

static void finish(buf_t *b)
{
	for (size_t i = 0; i < b->len; i += 4093) h = (h ^ b->p[i]) * 0x100000001b3ull;
	h = (h ^ b->p[b->len - 1] ^ b->len) * 0x100000001b3ull;
	free(b->p);
	b->p = NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	int nbuf = (int)(128 * scale);
	if (nbuf < LIVE) nbuf = LIVE;
	buf_t b[LIVE];
	int next = 0, done = 0;
	long reallocs = 0;
	for (int i = 0; i < LIVE; i++) start(&b[i], next++);
	while (done < nbuf) {
		for (int i = 0; i < LIVE; i++) {
			buf_t *x = &b[i];
			if (!x->p) continue;
			uint64_t r = rnd();
			size_t chunk = x->exact ? 1 + r % 8192 : 1 + r % 256;
			size_t need = x->len + chunk;
			if (need > x->cap) {
				size_t nc = x->exact ? need : x->cap + x->cap / 2;
				if (nc < need) nc = need;
				unsigned char *q = realloc(x->p, nc);
				if (!q) { fprintf(stderr, "realloc: realloc(%zu) failed\n", nc); return 2; }
				x->p = q;
				x->cap = nc;
				reallocs++;
			}
			memset(x->p + x->len, (int)((r >> 32) & 0xff), chunk);
			x->len = need;
			if (x->len >= x->target) {
				finish(x);
				done++;
				if (next < nbuf) start(x, next++);
			}
		}
	}
	printf("realloc buffers=%d reallocs=%ld checksum=%016llx\n", nbuf, reallocs,
	       (unsigned long long)h);
	return 0;
}
