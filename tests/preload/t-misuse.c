/* t-misuse.c CASE - one heap misuse (or one harmless look-alike) per run, for misuse.sh.
 * Before the bad call it prints "ptr 0x…" on stdout (flushed), so the test can match the
 * address in the library's message. Exit 0 means the program survived. */
#define _GNU_SOURCE
#include "testutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* Through a volatile pointer, so that the compiler does not see (and warn about) the misuse. */
static void (*volatile free_p)(void *) = free;
static void *(*volatile realloc_p)(void *, size_t) = realloc;

static unsigned char static_block[4096] __attribute__((aligned(64)));

static void *free_in_thread(void *p)
{
	free_p(p);
	return NULL;
}

static void announce(const void *p)
{
	printf("ptr %p\n", p);
	fflush(stdout);
}

static void *alloc(size_t n)
{
	void *p = malloc(n);

	CHECK(p != NULL, "malloc(%zu) returned NULL", n);
	CHECK_RANGE(p, n, "malloc");
	memset(p, 0x33, n);
	return p;
}

/* A use-after-free write: the first word of the freed block f (its free-list link) becomes v. */
static void __attribute__((noinline)) poke(void *volatile f, void *v)
{
	memcpy(f, &v, sizeof v);
}

/* A block freed by another thread (not taken back yet), then by its owner: had that been
 * accepted, the block would be on the free list twice and two mallocs would get it. With wipe,
 * a use-after-free write over the whole block comes between: the owner's free then cannot tell
 * the block from a live one and takes it, but it must still never reach two mallocs (the
 * owner's collect of the remote free finds the block written since and aborts). */
static void free_remote_then_owner(int wipe)
{
	pthread_t t;
	void *q = alloc(40);
	pthread_create(&t, NULL, free_in_thread, q);
	pthread_join(t, NULL);
	announce(q);
	if (wipe) memset(q, 0x5a, 40);
	free_p(q);
	if (wipe == 2) {
		/* and another use-after-free write puts back what the other thread's free wrote
		 * there, as a program that knew the library's key would compute it (the key of
		 * before it was drawn at start) */
		uintptr_t tag = (uintptr_t)q ^ (uintptr_t)0xa5c3e1d2b4f69781ull;
		memcpy((char *)q + sizeof(void *), &tag, sizeof tag);
	}
	void *first = malloc(40);
	for (int i = 0; i < 100000; i++)
		if (malloc(40) == first) { printf("live block %p handed out twice\n", first); break; }
}

/* The owner and another thread free one block at the same moment, once in each of n forked
 * children: either free may abort (a double free), but if both get through, the block must
 * never reach two mallocs. Prints how many children saw that; exit 0 when none did. */
static void *volatile race_block;
static atomic_int race_go;

static void *race_free(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&race_go, memory_order_acquire)) {}
	free_p(race_block);
	return NULL;
}

static int race_child(unsigned jitter)
{
	void *warm = malloc(40);             /* the owner's run exists */
	race_block = malloc(40);
	pthread_t t;
	if (!warm || !race_block || pthread_create(&t, NULL, race_free, NULL) != 0) return 3;
	usleep(1000);
	atomic_store_explicit(&race_go, 1, memory_order_release);
	for (volatile unsigned i = 0; i < jitter % 8; i++) {}
	free_p(race_block);
	pthread_join(t, NULL);
	void *first = malloc(40);
	for (int i = 0; i < 5000; i++)
		if (malloc(40) == first) return 42;
	return 0;
}

static int double_free_race(int n)
{
	int twice = 0;
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		CHECK(pid >= 0, "fork failed");
		if (pid == 0) {
			int fd = open("/dev/null", O_WRONLY);
			if (fd >= 0) dup2(fd, 2);    /* the abort messages */
			_exit(race_child((unsigned)i));
		}
		int st;
		CHECK(waitpid(pid, &st, 0) == pid, "waitpid failed");
		if (WIFEXITED(st) && WEXITSTATUS(st) == 42) twice++;
	}
	printf("double-free-race: %d of %d children got one block from two mallocs\n", twice, n);
	if (twice) printf("live block handed out twice\n");
	return twice ? 1 : 0;
}

/* Write link into the link of a freed 48-byte block, then malloc until the library takes the
 * link: it must abort naming target (what the link leads to), never return it. */
static void corrupt_link(unsigned char *freed, void *link, void *target)
{
	announce(target);
	poke(freed, link);
	for (int i = 0; i < 4; i++) {
		void *r = malloc(48);
		printf("malloc returned %p\n", r);
		fflush(stdout);
		CHECK(r != target, "malloc handed out the corrupted link's target %p", target);
	}
}

/* A thread with a heap of its own frees p twice: both frees join its chain for p's run (the
 * block stays live until the owner collects), and the owner's collection meets p again. */
static void *free_twice_in_thread(void *p)
{
	void *own = malloc(16);
	free_p(p);
	free_p(p);
	free(own);
	return NULL;
}

/* The same with another block of the run freed first, so p is not the chain's last block: its
 * second free makes a cycle. */
static void *other_block;
static void *free_other_then_twice(void *p)
{
	void *own = malloc(16);
	free_p(other_block);
	free_p(p);
	free_p(p);
	free(own);
	return NULL;
}

static void *remote_free_and_exit(void *p)
{
	free_p(p);
	return NULL;
}

static void bad_free(void *p)
{
	announce(p);
	free_p(p);
}

/* Memory the library never handed out and that lies outside the range: a shared mapping of a
 * real file (the library may serve anonymous mmaps from the range, never file mappings). */
static void *foreign_mapping(size_t len)
{
	char path[] = "/tmp/libcontig-misuse-XXXXXX";
	int fd = mkstemp(path);
	void *m;

	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	unlink(path);
	CHECK(ftruncate(fd, (off_t)len) == 0, "ftruncate: %s", strerror(errno));
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED, "mmap of a file: %s", strerror(errno));
	close(fd);
	CHECK(!tu_in_range((uintptr_t)m, 1), "the file mapping %p landed inside the range", m);
	memset(m, 0x44, len);
	return m;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	unsigned char *p, *q;

	tu_init();
	if (strcmp(c, "double-free-large-reused") == 0) {
		/* First thing, before stdio has a buffer: a large block freed between live
		 * neighbours (or the range's start) whose pages become a small run of the same
		 * length. The run's first block had the large block's address, and the second free
		 * freed that block silently: two mallocs then got the same block. */
		free_p(malloc(150000));
		q = malloc(150000);
		unsigned char *guard = malloc(150000), *r;
		free_p(q);
		r = malloc(45000);                      /* (a 3-page run, cut from q's pages) */
		CHECK(q && guard && r, "malloc failed");
		bad_free(q);
		(void)guard;                            /* (r is q when the free went through) */
		return 0;
	}
	/* stdio allocates its buffer on first use: do it now, or that buffer could land on a block
	 * just freed (a freed large run is reused for small pages) and make a double free valid. */
	printf("case %s\n", c);
	fflush(stdout);
	/* Some blocks around, so the heap is not trivially empty. */
	p = alloc(64);
	q = alloc(100000);
	free(q);

	/* Cases that must abort with "libcontig: free(): invalid pointer 0x…". */
	if (strcmp(c, "double-free-small") == 0) {
		q = alloc(48);
		free_p(q);
		bad_free(q);
	} else if (strcmp(c, "double-free-medium") == 0) {
		q = alloc(70000);
		free_p(q);
		bad_free(q);
	} else if (strcmp(c, "double-free-large") == 0) {
		q = alloc((size_t)8 << 20);
		free_p(q);
		bad_free(q);
	} else if (strcmp(c, "double-free-onepage-aligned") == 0) {
		/* a one-page large block: its first free may start the library's purger thread,
		 * whose thread set-up callocs a block that lands on the freed page */
		q = memalign((size_t)1 << 17, 100);
		CHECK(q != NULL, "memalign failed");
		free_p(q);
		bad_free(q);
	} else if (strcmp(c, "double-free-aligned") == 0) {
		q = aligned_alloc(4096, 8192);
		CHECK(q != NULL, "aligned_alloc failed");
		free_p(q);
		bad_free(q);
	} else if (strcmp(c, "interior-small") == 0) {
		q = alloc(64);
		bad_free(q + 16);
	} else if (strcmp(c, "interior-large") == 0) {
		q = alloc((size_t)8 << 20);
		bad_free(q + 4096);
	} else if (strcmp(c, "interior-misaligned") == 0) {
		q = alloc(200);
		bad_free(q + 1);
	} else if (strcmp(c, "never-handed-out") == 0) {
		bad_free((void *)(tu_base + tu_size - 4096));
	} else if (strcmp(c, "double-free-mmap") == 0) {
		/* a served anonymous mapping is not a heap block */
		q = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(q != MAP_FAILED, "mmap failed");
		bad_free(q);
	} else if (strcmp(c, "double-free-remote") == 0) {
		pthread_t t;
		q = alloc(64);
		free_p(q);
		announce(q);
		pthread_create(&t, NULL, free_in_thread, q);
		pthread_join(t, NULL);
	} else if (strcmp(c, "carved-free-remote") == 0) {
		/* the block after a fresh run's first one: carved onto the free list, never handed
		 * out, freed by another thread (which does not read the live bitmap unless the
		 * block says it may be free: every block on a free list does) */
		pthread_t t;
		q = alloc(712);                 /* a class nothing else here uses */
		q += 768;                       /* its class is 768 bytes: the next block */
		announce(q);
		pthread_create(&t, NULL, free_in_thread, q);
		pthread_join(t, NULL);
		_exit(0);       /* the free must abort at the call: nothing at exit may catch it instead */
	} else if (strcmp(c, "double-free-remote-tag-wiped") == 0) {
		/* the owner's free, a use-after-free write over the block's second word only (its
		 * link intact), another thread's free: that one cannot tell the block from a live
		 * one, but the owner's collect of it must abort, and no block reach two mallocs */
		pthread_t t;
		q = alloc(40);
		free_p(q);
		memset(q + 8, 0x5a, 8);
		announce(q);
		pthread_create(&t, NULL, free_in_thread, q);
		pthread_join(t, NULL);
		void *first = malloc(40);
		for (int i = 0; i < 100000; i++)
			if (malloc(40) == first) { printf("live block %p handed out twice\n", first); break; }
		printf("survived double-free-remote-tag-wiped\n");
	} else if (strcmp(c, "double-free-remote-then-owner") == 0) {
		free_remote_then_owner(0);
	} else if (strcmp(c, "double-free-remote-wiped-then-owner") == 0) {
		free_remote_then_owner(1);
	} else if (strcmp(c, "double-free-remote-wiped-restored") == 0) {
		free_remote_then_owner(2);
	} else if (strcmp(c, "double-free-race") == 0) {
		return double_free_race(argc > 2 ? atoi(argv[2]) : 300);
	} else if (strcmp(c, "realloc-remote-freed") == 0) {
		pthread_t t;
		q = alloc(40);
		pthread_create(&t, NULL, free_in_thread, q);
		pthread_join(t, NULL);
		announce(q);
		q = realloc_p(q, 48);        /* the same class: it would stay in place */
		printf("realloc returned %p\n", (void *)q);
	} else if (strcmp(c, "double-free-remote-chained") == 0) {
		pthread_t t;
		q = alloc(64);
		announce(q);
		pthread_create(&t, NULL, free_twice_in_thread, q);
		pthread_join(t, NULL);
		for (int i = 0; i < 5000; i++)   /* use up the run's local blocks: malloc collects */
			if (!malloc(64)) break;
		printf("survived double-free-remote-chained\n");
	} else if (strcmp(c, "double-free-remote-cycle") == 0) {
		pthread_t t;
		q = alloc(64);
		other_block = alloc(64);   /* the same run */
		announce(q);
		pthread_create(&t, NULL, free_other_then_twice, q);
		pthread_join(t, NULL);
		for (int i = 0; i < 5000; i++)
			if (!malloc(64)) break;
		printf("survived double-free-remote-cycle\n");
	} else if (strcmp(c, "free-after-purge") == 0) {
		q = alloc(200000);
		free_p(q);
		malloc_trim(0);               /* its pages went back to the OS */
		bad_free(q);
	} else if (strcmp(c, "free-sized-wrong") == 0) {
		void (*fs)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
		CHECK(fs != NULL, "free_sized not found");
		q = alloc(100);
		announce(q);
		fs(q, 100000);
	} else if (strcmp(c, "realloc-freed") == 0) {
		q = alloc(256);
		free_p(q);
		announce(q);
		q = realloc_p(q, 512);
		printf("realloc returned %p\n", (void *)q);
	} else if (strcmp(c, "realloc-freed-inplace") == 0) {
		q = alloc(100);
		free_p(q);
		announce(q);
		q = realloc_p(q, 90);         /* it would stay in place: the block still fits */
		printf("realloc returned %p\n", (void *)q);
	} else if (strcmp(c, "realloc-interior") == 0) {
		q = alloc(200);
		announce(q + 16);
		q = realloc_p(q + 16, 300);
		printf("realloc returned %p\n", (void *)q);
	} else if (strcmp(c, "realloc-freed-large") == 0) {
		q = alloc((size_t)4 << 20);
		free_p(q);
		announce(q);
		q = realloc_p(q, (size_t)5 << 20);
		printf("realloc returned %p\n", (void *)q);

	/* Corrupted free-list links: "libcontig: malloc(): heap corruption at 0x…" and SIGABRT. */
	} else if (strncmp(c, "corrupt-", 8) == 0) {
		unsigned char *live = alloc(48), *freed = alloc(48), *other = alloc(2000);
		unsigned char *spare = alloc(48);
		void *target = NULL, *link = NULL;
		while (((uintptr_t)live ^ (uintptr_t)freed) >> 16) {   /* one run for both */
			live = freed;
			freed = alloc(48);
		}
		if (strcmp(c, "corrupt-live") == 0) target = live;                 /* onto a live block */
		else if (strcmp(c, "corrupt-interior") == 0) target = live + 16;   /* into one */
		else if (strcmp(c, "corrupt-misaligned") == 0) target = spare + 8; /* off any block start */
		else if (strcmp(c, "corrupt-other-page") == 0) target = other;     /* another page's block */
		else if (strcmp(c, "corrupt-outside") == 0) target = static_block; /* outside the range */
		else if (strcmp(c, "corrupt-beyond") == 0)                          /* past the carved blocks */
			target = (unsigned char *)(((uintptr_t)live | 0xffff) - 63);
		/* the same two written as what the library keeps in a link, a block's index in its
		 * run (a 48-byte run starts at its 64 KiB page, never coloured): a small number, as
		 * a program's own data often is */
		else if (strcmp(c, "corrupt-index-live") == 0) {
			target = live;
			link = (void *)(((uintptr_t)live & 0xffff) / 48);
		} else if (strcmp(c, "corrupt-index-beyond") == 0)
			target = link = (void *)(uintptr_t)(65536 / 48);   /* no 48-byte run has as many */
		else if (strcmp(c, "corrupt-remote") == 0) {
			/* a block freed by another thread and not taken back by its owner yet: a
			 * use-after-free write of a live block's address into it (where a remote-free
			 * list would keep its link) must never make malloc hand out the live block.
			 * Remote frees are bits in the run's freed bitmap, so nothing follows the
			 * write: the process survives, and never gets the live block twice. */
			pthread_t t;
			unsigned char *blk[4096];
			int n = 0;
			pthread_create(&t, NULL, remote_free_and_exit, freed);
			pthread_join(t, NULL);
			poke(freed, live);
			/* use up the run's local blocks, so malloc has to collect */
			for (n = 0; n < 4096; n++) {
				blk[n] = malloc(48);
				CHECK(blk[n] != live, "malloc handed out the live block %p", (void *)live);
				if (((uintptr_t)blk[n] ^ (uintptr_t)live) >= 65536) break;
			}
			printf("survived corrupt-remote (%d blocks)\n", n);
			return 0;
		}
		free_p(spare);
		free_p(freed);                 /* freed heads its page's free list */
		corrupt_link(freed, link ? link : target, target);

	/* Cases that must not crash. */
	} else if (strcmp(c, "free-null") == 0) {
		free_p(NULL);
	} else if (strcmp(c, "free-foreign-mmap") == 0) {
		unsigned char *m = foreign_mapping(65536);
		free_p(m);
		free_p(m + 4096);
		CHECK(m[100] == 0x44, "the foreign mapping was changed by free");
		munmap(m, 65536);
	} else if (strcmp(c, "free-static") == 0) {
		memset(static_block, 0x44, sizeof static_block);
		free_p(static_block + 64);
		CHECK(static_block[0] == 0x44 && static_block[4095] == 0x44,
		      "the static array was changed by free");
	} else if (strcmp(c, "realloc-foreign") == 0) {
		unsigned char *m = foreign_mapping(65536), *r;
		errno = 0;
		r = realloc_p(m, 100);
		if (r == NULL) {
			CHECK(errno == ENOMEM, "realloc of a foreign pointer: NULL with errno %d, not ENOMEM",
			      errno);
		} else {
			/* The library could tell the size: then it copied and the result is ours. */
			CHECK_RANGE(r, 100, "realloc of a foreign pointer");
			CHECK(r[0] == 0x44 && r[99] == 0x44, "realloc of a foreign pointer lost the data");
			free(r);
		}
		CHECK(m[0] == 0x44, "the foreign mapping was changed by realloc");
	} else {
		fprintf(stderr, "usage: t-misuse CASE (unknown case \"%s\")\n", c);
		return 2;
	}
	/* Still alive: the heap must still work. */
	q = alloc(1000);
	free(q);
	free(p);
	printf("survived %s\n", c);
	return 0;
}
