/* t-pagemap.c - known blocks for the page map tests (tools/test_contig.py): ten blocks of 2900
 * bytes (class 3072) of which three are freed again, one large block of 300000 bytes and a 1 MiB
 * anonymous mmap. Prints their addresses, then "ready", and waits for its standard input to
 * close so that a reader can look at the running process; exits 0 without freeing them. */
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
	if (!large || map == MAP_FAILED) return 1;
	memset(large, 1, 300000);
	memset(map, 1, 1 << 20);
	printf("small %p large %p mmap %p\nready\n", (void *)small[3], (void *)large, map);
	fflush(stdout);
	char c;
	while (read(0, &c, 1) > 0) {}
	return 0;
}
