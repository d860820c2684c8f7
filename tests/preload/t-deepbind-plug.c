/* t-deepbind-plug: the plugin t-deepbind opens, built by deepbind.sh as a shared object. Its
 * malloc-family calls bind wherever its dlopen mode makes them bind. */
#include <stdlib.h>
#include <string.h>

void *plug_swap(void *p, size_t n);
char *plug_strdup(const char *s);
void *plug_realloc(void *p, size_t n);

/* Frees p, a block of the program's; returns a block of n bytes of its own. */
void *plug_swap(void *p, size_t n)
{
	free(p);
	return malloc(n);
}

char *plug_strdup(const char *s)
{
	return strdup(s);
}

void *plug_realloc(void *p, size_t n)
{
	return realloc(p, n);
}
