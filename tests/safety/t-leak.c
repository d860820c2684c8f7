/* t-leak.c leak|clean - leak: leaves exactly two blocks of 100 and 7 bytes live at exit (after
 * printing with printf, whose buffer libc keeps); clean: frees everything it allocated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *volatile kept[2];        /* volatile: the compiler may not drop the allocations */

int main(int argc, char **argv)
{
	int leak = argc > 1 && strcmp(argv[1], "leak") == 0;
	void *tmp[100];
	for (int i = 0; i < 100; i++)
		tmp[i] = malloc(16 + (size_t)i * 50);
	for (int i = 0; i < 100; i++)
		free(tmp[i]);
	kept[0] = malloc(100);
	kept[1] = malloc(7);
	if (!kept[0] || !kept[1])
		return 3;
	memset(kept[0], 1, 100);
	memset(kept[1], 2, 7);
	printf("t-leak: %s, blocks at %p and %p\n", leak ? "leaking 100 + 7 bytes" : "freeing everything",
	       kept[0], kept[1]);
	if (!leak) {
		free(kept[0]);
		free(kept[1]);
	}
	return 0;
}
