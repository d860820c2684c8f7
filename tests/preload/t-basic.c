/* t-basic.c - a plain small program for the environment and statistics tests: allocates and
 * frees a little (small, medium, large), prints the address of each block it keeps, one per
 * line, and exits 0. It checks no range itself: the caller knows which range to expect. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	static const size_t sizes[] = { 16, 100, 4000, 70000, 1u << 20, 8u << 20 };
	void *keep[sizeof sizes / sizeof sizes[0]];
	size_t i;
	int round;

	for (round = 0; round < 100; round++) {
		void *t = malloc(32 + (size_t)round * 40);
		if (t == NULL)
			return 3;
		memset(t, 1, 32 + (size_t)round * 40);
		free(t);
	}
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		keep[i] = malloc(sizes[i]);
		if (keep[i] == NULL) {
			fprintf(stderr, "t-basic: malloc(%zu) returned NULL\n", sizes[i]);
			return 3;
		}
		memset(keep[i], 2, sizes[i]);
		printf("%p\n", keep[i]);
	}
	/* Free all but the first, so a statistics summary has live blocks to show. */
	for (i = 1; i < sizeof sizes / sizeof sizes[0]; i++)
		free(keep[i]);
	return 0;
}
