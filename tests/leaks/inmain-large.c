/* inmain-large.c - a large block lost in main itself, with no scrub of the stack (inmain.c says
 * why that went unreported).
 * EXPECT: direct=300000/1 indirect=0/0
 * STACK: main
 * BUILD: -g -O0
 */
#include <stdlib.h>

int main(void)
{
	char *q = malloc(300000);
	q[0] = 1;
	q = NULL;
	return q != NULL;
}
