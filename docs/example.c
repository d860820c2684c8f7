/* example.c - using libcontig's API from a program linked with -lcontig:
 *     cc example.c $(pkg-config --cflags --libs contig) -o example && ./example
 * It asks whether pointers are on the heap (one compare), prints the range and the statistics,
 * returns freed memory to the OS at once, and hears about collisions through a callback.
 * Exits 0 when all of that worked. */
#include <contig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int collisions_seen;

/* Called once for each new collision, with no library lock held. */
static void on_collision(const contig_collision_t *c, void *arg)
{
	(void)arg;
	collisions_seen++;
	printf("collision: %#lx, %zu bytes, route %d\n", (unsigned long)c->addr, c->len, (int)c->route);
}

int main(void)
{
	static int not_heap;
	char *base = contig_base();
	size_t size = contig_size();
	contig_stats_t st;

	printf("libcontig %s: heap range %p-%p (%zu GiB)\n", contig_version(), (void *)base,
	       (void *)(base + size), size >> 30);
	contig_set_collision_callback(on_collision, NULL);

	/* Every block, big or small, lies in the range: "is this a heap pointer?" is one compare. */
	char *small = malloc(100), *big = malloc(8 << 20);
	if (!small || !big || !contig_owns(small) || !contig_owns(big) || contig_owns(&not_heap)) {
		fprintf(stderr, "example: blocks %p %p not in the range\n", (void *)small, (void *)big);
		return 1;
	}
	memset(big, 1, 8 << 20);
	printf("malloc(100) = %p at offset %#lx; malloc(8 MiB) = %p\n", (void *)small,
	       (unsigned long)(small - base), (void *)big);

	/* A mapping call that would destroy heap blocks is refused, and recorded as a collision;
	 * the callback hears of it on the library's next trip to its page allocator. */
	void *page = (void *)((unsigned long)small & ~4095ul);
	if (mmap(page, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
		fprintf(stderr, "example: mmap(MAP_FIXED) over a heap block was allowed\n");
		return 1;
	}
	free(big);
	big = malloc(16 << 20);
	free(big);
	size_t purged = contig_purge();              /* freed pages go back to the OS now */
	printf("contig_purge() returned %zu KiB to the OS\n", purged >> 10);

	st.size = sizeof st;                         /* the struct may grow: say which one we know */
	if (contig_get_stats(&st) != 0) {
		perror("contig_get_stats");
		return 1;
	}
	printf("mode %d, reserved %zu MiB, committed %zu KiB (peak %zu KiB)\n", st.mode, st.reserved >> 20,
	       st.committed >> 10, st.committed_peak >> 10);
	printf("live %zu blocks, %zu bytes; calls: %llu malloc, %llu free; purged %zu KiB\n", st.live_blocks,
	       st.live_bytes, (unsigned long long)st.calls_malloc, (unsigned long long)st.calls_free,
	       st.purged_bytes >> 10);
	printf("collisions %zu (callback saw %d)\n", st.collisions, collisions_seen);
	free(small);
	return st.collisions >= 1 && collisions_seen >= 1 ? 0 : 1;
}
