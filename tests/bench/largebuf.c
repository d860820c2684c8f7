/* largebuf: large buffers made and freed again, as a server's threads handle
 * requests.  T threads (default 2; `largebuf SCALE T`), 300000 requests each
 * at scale 1.  A request takes an input buffer and an output buffer, each of
 * one of three sizes (160 KiB + 64 B, 384 KiB, 1 MiB + 4 KiB: a header on a
 * power of two, as programs ask), the request's kind picking them; it writes
 * the first bytes and one 4 KiB page in the middle of each, checks them, and
 * frees the input, then the output.  Kinds come in runs (a connection sends
 * several requests of one kind), so the same sizes come again and again.
 * Little memory is touched: this measures how large requests are served and
 * returned when the sizes repeat, while other threads do the same.
 * Usage: largebuf [scale] [threads]   Prints one deterministic checksum line. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXT 64

static const size_t sizes[3] = { (160u << 10) + 64, 384u << 10, (1u << 20) + 4096 };
static long requests;
static uint64_t sums[MAXT];
static volatile int failed;

static unsigned char *take(size_t n, uint64_t tag)
{
	unsigned char *p = malloc(n);
	if (!p) { fprintf(stderr, "largebuf: malloc(%zu) failed\n", n); exit(2); }
	memcpy(p, &tag, 8);
	memcpy(p + n / 2, &tag, 8);
	return p;
}

static uint64_t give_back(unsigned char *p, size_t n, uint64_t tag)
{
	uint64_t a, b;
	memcpy(&a, p, 8);
	memcpy(&b, p + n / 2, 8);
	if (a != tag || b != tag) failed = 1;
	free(p);
	return a ^ (b << 1) ^ n;
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint64_t rng = 0x243f6a8885a308d3ull ^ ((uint64_t)(t + 1) * 0x9e3779b97f4a7c15ull);
	uint64_t h = 0;
	unsigned kind = 0, left = 0;
	for (long r = 0; r < requests; r++) {
		rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
		if (left == 0) {               /* a new connection: its kind, and how many requests */
			kind = (unsigned)(rng % 9);
			left = 1 + (unsigned)((rng >> 8) % 16);
		}
		left--;
		size_t in = sizes[kind % 3], out = sizes[kind / 3];
		uint64_t tag = rng ^ (uint64_t)r;
		unsigned char *a = take(in, tag), *b = take(out, ~tag);
		h = (h ^ give_back(a, in, tag)) * 0x100000001b3ull;
		h = (h ^ give_back(b, out, ~tag)) * 0x100000001b3ull;
	}
	sums[t] = h;
	return NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	int nthreads = argc > 2 ? atoi(argv[2]) : 2;
	if (nthreads < 1 || nthreads > MAXT) nthreads = 2;
	requests = (long)(300000 * scale);
	if (requests < 50) requests = 50;
	pthread_t th[MAXT];
	for (int t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t)) return 2;
	for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
	uint64_t h = 0;
	for (int t = 0; t < nthreads; t++) h = (h ^ sums[t]) * 0x100000001b3ull;
	if (failed) { fprintf(stderr, "largebuf: a buffer lost its contents\n"); return 1; }
	printf("largebuf threads=%d requests=%ld checksum=%016llx\n", nthreads, requests, (unsigned long long)h);
	return 0;
}
