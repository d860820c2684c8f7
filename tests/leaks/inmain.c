/* inmain.c - the leaks a first test writes, with no help from the program: a strdup and a large
 * block lost in main itself, and no scrub of the stack before main returns. Each allocation left
 * a copy of its block's address in the dead stack below main (a spilled register of the large
 * path, of the record of the allocation's stack), in slots the exit path's frames do not write,
 * and the check at exit found both blocks reachable: no report, where LeakSanitizer reports
 * both. Now every allocation clears the stack it used before it returns (leak_scrubbed).
 * inmain-large.c is the large block alone.
 * EXPECT: direct=300012/2 indirect=0/0
 * STACK: main
 * BUILD: -g -O0
 */
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char *s = strdup("hello world");
	s = NULL;
	char *q = malloc(300000);
	q[0] = 1;
	q = NULL;
	return s != NULL || q != NULL;
}
