/* t-deepbind: a plugin opened with RTLD_DEEPBIND, as PHP opens its extensions, frees blocks this
 * program made and makes blocks this program frees, so its malloc and free must be the library's
 * as the program's are (under glibc's own they would not be: glibc's free would crash on the
 * program's blocks). The plugin is opened by its bare name, which only this program's DT_RUNPATH
 * finds: dlopen must still see this program as its caller, not the library that interposes it.
 * Usage: t-deepbind PLUGIN-NAME deep|plain   Prints "ok" and exits 0, or "FAIL: ..." and 1. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

int main(int argc, char **argv)
{
	tu_init();
	CHECK(argc == 3, "usage: t-deepbind PLUGIN-NAME deep|plain");
	int mode = RTLD_NOW | RTLD_LOCAL | (strcmp(argv[2], "deep") == 0 ? RTLD_DEEPBIND : 0);
	/* twice: the first dlopen of a process finds the next dlopen, a later one may go straight */
	for (int round = 0; round < 2; round++) {
		void *h = dlopen(argv[1], mode);
		CHECK(h != NULL, "dlopen(%s): %s", argv[1], dlerror());
		void *(*swap)(void *, size_t) = (void *(*)(void *, size_t))dlsym(h, "plug_swap");
		char *(*dup)(const char *) = (char *(*)(const char *))dlsym(h, "plug_strdup");
		void *(*grow)(void *, size_t) = (void *(*)(void *, size_t))dlsym(h, "plug_realloc");
		CHECK(swap && dup && grow, "dlsym: %s", dlerror());
		uint64_t seed = 42;
		for (int i = 0; i < 2000; i++) {
			size_t n = (size_t)(tu_rand(&seed) % 3000) + 1, m = (size_t)(tu_rand(&seed) % 3000) + 1;
			void *p = malloc(n);
			CHECK_RANGE(p, n, "program's malloc");
			tu_fill(p, n, (uint64_t)i);
			void *q = swap(p, m);            /* the plugin frees p, returns a block of its own */
			CHECK_RANGE(q, m, "plugin's malloc");
			tu_fill(q, m, (uint64_t)i + 7);
			q = grow(q, m * 3);              /* the plugin reallocs it (a move, most times) */
			CHECK_RANGE(q, m * 3, "plugin's realloc");
			CHECK(tu_verify(q, m, (uint64_t)i + 7) == -1, "plugin's realloc lost the bytes of %p", q);
			free(q);                         /* the program frees the plugin's block */
		}
		char *s = dup("contig");
		CHECK_RANGE(s, 7, "plugin's strdup");
		CHECK(strcmp(s, "contig") == 0, "plugin's strdup: %s", s);
		free(s);
		CHECK(dlclose(h) == 0, "dlclose: %s", dlerror());
	}
	puts("ok");
	return 0;
}
