/* t-pagemap.c - known blocks for the page map tests (tools/test_contig.py): ten blocks of 2900
 * bytes (class 3072) of which three are freed again, one large block of 300000 bytes, a 1 MiB
 * anonymous mmap, and a 1 MiB PROT_NONE reservation whose first 128 KiB are made read-write and
 * touched (served from the range only under CONTIG_MMAP=all). Prints their addresses, then
 * "ready", and waits for its standard input to close so that a reader can look at the running
 * process; exits 0 without freeing them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
	char *small[10];
	for (int i = 0; i < 10; i++) {
		small[i] = malloc(2900);
		if (!small[i]) return 1;
		memset(small[i], i, 2900);
	}
	for (int i = 0; i < 3; i++) free(small[i]);
	char *large = malloc(300000);
	void *map = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *resv = mmap(NULL, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!large || map == MAP_FAILED || resv == MAP_FAILED) return 1;
	if (mprotect(resv, 128 << 10, PROT_READ | PROT_WRITE) != 0) return 1;
	memset(large, 1, 300000);
	memset(map, 1, 1 << 20);
	memset(resv, 1, 128 << 10);
	printf("small %p large %p mmap %p resv %p\nready\n", (void *)small[3], (void *)large, map, (void *)resv);
	fflush(stdout);
	char c;
	while (read(0, &c, 1) > 0) {}
	return 0;
}
