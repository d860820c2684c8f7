/* stderr.c - a leaking program that does what real programs do to stderr before they exit.
 * Run by stderr.sh, not by the corpus runner. Argument:
 *   keep     leave stderr alone
 *   close    close fd 2 (as gnulib's close_stdout does at exit)
 *   closeall close fds 0, 1 and 2 (the symbolizer's socket then lands on them)
 *   reuse F  close fd 2, open F (which takes fd 2), write "mine" to it
 * It leaks one 77-byte block either way. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "corpus.h"

static NOINLINE void lose(void)
{
	char *p = malloc(77);
	memset(p, 1, 77);
	KEEP(p);
}

int main(int argc, char **argv)
{
	lose();
	scrub_stack();
	if (argc > 1 && strcmp(argv[1], "close") == 0) close(2);
	if (argc > 1 && strcmp(argv[1], "closeall") == 0) { close(0); close(1); close(2); }
	if (argc > 2 && strcmp(argv[1], "reuse") == 0) {
		close(2);
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd != 2) return 3;
		if (write(fd, "mine\n", 5) != 5) return 4;
	}
	return 0;
}
