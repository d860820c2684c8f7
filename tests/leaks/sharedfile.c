/* sharedfile.c - blocks held only by pointers stored in a file mapped shared and writable (a
 * temporary file, and shm_open memory): the program's own memory from mmap, so roots (they
 * were skipped as a file's shared pages: both blocks reported as leaks). Only resident pages
 * of such a mapping are read: the 64 MiB file below is never read from disk.
 * EXPECT: direct=0/0 indirect=0/0
 * BUILD: -g -O2 -fomit-frame-pointer
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "corpus.h"

#define BIG ((size_t)64 << 20)

static NOINLINE int fill(void)
{
	char path[] = "/tmp/contig-sharedfile.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, (off_t)BIG) != 0) return 1;
	unlink(path);
	void **m = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) return 1;
	close(fd);
	m[(BIG / sizeof *m) / 2] = malloc(15);
	char name[64];
	snprintf(name, sizeof name, "/contig-sharedfile-%d", (int)getpid());
	int sfd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (sfd < 0) return 0;          /* no /dev/shm here: the file case alone */
	shm_unlink(name);
	if (ftruncate(sfd, 4096) != 0) return 1;
	void **s = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
	if (s == MAP_FAILED) return 1;
	close(sfd);
	s[3] = malloc(17);
	return 0;
}

int main(void)
{
	int r = fill();
	scrub_stack();
	return r;
}
