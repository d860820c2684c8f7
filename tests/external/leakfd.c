/* leakfd.c - preloaded in front of libcontig by run.sh's leak pass (EXTERNAL_LEAKS=1).
 *
 * libcontig writes its exit leak report to fd 2, but the suites compare what their programs
 * write there (GLib's trap subprocesses, Python's assert_python_ok and friends), so a report on
 * stderr would change outcomes. This destructor runs after the program's own exit handlers and
 * just before libcontig's (it is listed first in LD_PRELOAD, so it is finalised first) and points
 * fd 2 at $EXTERNAL_LEAKS_DIR/PID-NAME.txt, whose first line is "leakfd: cmd: " and the command
 * line (to tell the processes of a unit apart); leaksum.py removes the files with nothing more. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/types.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((destructor)) static void leakfd_redirect(void)
{
	const char *dir = getenv("EXTERNAL_LEAKS_DIR");
	char path[4096];
	if (!dir || !*dir) return;
	int n = snprintf(path, sizeof path, "%s/%ld-%s.txt", dir, (long)getpid(),
	                 program_invocation_short_name);
	if (n < 0 || (size_t)n >= sizeof path) return;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) return;
	char cmd[1024];
	const char head[] = "leakfd: cmd:";
	ssize_t len = 0;
	int cfd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (cfd >= 0) {
		len = read(cfd, cmd, sizeof cmd - 1);
		(void)close(cfd);
	}
	(void)!write(fd, head, sizeof head - 1);
	for (ssize_t i = 0; i < len; i++)
		if (cmd[i] == '\0' || cmd[i] == '\n') cmd[i] = ' ';
	(void)!write(fd, " ", 1);
	if (len > 0) (void)!write(fd, cmd, (size_t)len);
	(void)!write(fd, "\n", 1);
	(void)fflush(stderr);
	if (fd != 2) {
		(void)dup2(fd, 2);
		(void)close(fd);
	}
}
