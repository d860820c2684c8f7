/* t-determ.c - SPEC "Determinism": prints the address of every block and mapping it gets, in
 * order, for determinism.sh to compare between runs. Small, medium and large blocks, frees of
 * some of them (pages go back to the OS on the purge timer), an optional pause of MS
 * milliseconds (`t-determ MS`: longer than CONTIG_PURGE_MS, so that the purger runs in between),
 * then more blocks, mappings, reallocs, and a forked child's blocks.
 * Usage: t-determ [MS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void say(const char *what, const void *p) { printf("%s %p\n", what, p); }

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 0;
	static void *b[64];
	for (int i = 0; i < 64; i++) {
		size_t n = i % 4 == 0 ? ((size_t)(i + 1) << 16) : i % 4 == 1 ? 3000 + (size_t)i * 100 : 16 + (size_t)i * 8;
		b[i] = malloc(n);
		if (!b[i]) return 2;
		memset(b[i], i, n);
		say("malloc", b[i]);
	}
	for (int i = 0; i < 64; i += 2) free(b[i]);         /* large ones among them: pages to purge */
	fflush(stdout);
	if (ms > 0) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < 64; i += 2) {
		size_t n = i % 8 == 0 ? ((size_t)(64 - i) << 15) : 100 + (size_t)i * 20;
		b[i] = malloc(n);
		if (!b[i]) return 2;
		memset(b[i], 1, n);
		say("malloc", b[i]);
	}
	for (int i = 0; i < 4; i++) {
		void *m = mmap(NULL, (size_t)(i + 1) << 18, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) return 2;
		say("mmap", m);
	}
	for (int i = 1; i < 64; i += 8) {
		b[i] = realloc(b[i], (size_t)1 << 17);
		if (!b[i]) return 2;
		say("realloc", b[i]);
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 8; i++) say("child", malloc((size_t)1000 << i));
		fflush(stdout);
		_exit(0);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 2;
	for (int i = 0; i < 64; i++) free(b[i]);
	return 0;
}
