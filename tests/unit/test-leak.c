/* test-leak.c - the leak check on memory laid out by the test: suppression patterns; blocks held
 * by a global, by a chain from it, by an interior pointer and by a thread's stack are reachable;
 * a lost block is a direct leak and what only it points to indirect; the counts are the bytes
 * asked. Each case runs in Check's own child (a fresh heap); without fork mode, or under
 * AddressSanitizer (whose shadow memory would be scanned), the scan cases are skipped. */
#include "leak.h"
#include "leak_report.h"
#include "leak_records.h"
#include "stack.h"
#include "heap.h"
#include "init.h"
#include "alloc.h"
#include "suites.h"
#include <pthread.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

START_TEST(patterns)
{
	ck_assert(leak_pattern_match("foo", "libfoo.so.1"));
	ck_assert(leak_pattern_match("foo", "foo"));
	ck_assert(!leak_pattern_match("foo", "fo"));
	ck_assert(leak_pattern_match("^foo", "foo_bar"));
	ck_assert(!leak_pattern_match("^foo", "xfoo"));
	ck_assert(leak_pattern_match("bar$", "foo_bar"));
	ck_assert(!leak_pattern_match("bar$", "bar_foo"));
	ck_assert(leak_pattern_match("^a*c$", "abbbc"));
	ck_assert(leak_pattern_match("^a*c$", "ac"));
	ck_assert(!leak_pattern_match("^a*c$", "acx"));
	ck_assert(leak_pattern_match("make_*leak", "t::make_small_leak(int)"));
	ck_assert(leak_pattern_match("*", "anything"));
	ck_assert(!leak_pattern_match("x", ""));
	ck_assert(!leak_pattern_match("", "x"));
}
END_TEST

static int scan_usable(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return 0;
#else
	const char *f = getenv("CK_FORK");
	return !(f && strcmp(f, "no") == 0);
#endif
}

void *volatile leak_root;               /* a global: a root */
static void *volatile lost[4];          /* pointers hidden by xor: not roots */
#define HIDE(p) ((void *)((uintptr_t)(p) ^ 0xa5a5a5a5a5a5a5a5ull))

/* Runs on a fresh thread, so that its heap's pages are made with records on (G.slow_only), 16 KiB
 * down its stack, which is then overwritten; the thread stays, parked (glibc keeps a dead
 * thread's stack mapped for reuse, and the scan would read all of it as program memory). */
__attribute__((noinline)) static void make_layout(void)
{
	void **a = alloc_malloc(64);        /* held by the global */
	void **b = alloc_malloc(100);       /* held by a */
	char *c = alloc_malloc(300);        /* held by an interior pointer in b */
	memset(a, 0, 64);
	memset(b, 0, 100);
	a[3] = b;
	b[5] = c + 123;
	leak_root = a;
	void **d = alloc_malloc(40);        /* lost: direct */
	void **e = alloc_malloc(24);        /* only d points to it: indirect */
	void *f = alloc_malloc(200000);     /* large, lost: direct */
	memset(d, 0, 40);
	memset(e, 0, 24);
	d[1] = e;
	lost[0] = HIDE(d);
	lost[1] = HIDE(e);
	lost[2] = HIDE(f);
}

__attribute__((noinline)) static void at_depth(void)
{
	volatile char pad[16384];
	pad[0] = 0;
	make_layout();
	pad[sizeof pad - 1] = 0;
}

__attribute__((noinline)) static void clobber(void)
{
	char junk[65536];
	memset(junk, 0, sizeof junk);
	__asm__ volatile("" : : "r"(junk) : "memory");     /* the stores may not be dropped */
}

static volatile int layout_done;
static void *layout(void *arg)
{
	(void)arg;
	at_depth();
	clobber();
	layout_done = 1;
	for (;;) pause();           /* parked: its stack is scanned from its stack pointer only */
	return NULL;
}

static void run_layout(void)
{
	contig_ensure_init();
	G.slow_only = 1;
	pthread_t t;
	pthread_create(&t, NULL, layout, NULL);
	while (!layout_done) sched_yield();
}

START_TEST(reachability)
{
	if (!scan_usable()) return;
	run_layout();
	size_t bytes = 1, blocks = 1;
	ck_assert_int_eq(leak_check(0, &bytes, &blocks), 0);
	ck_assert_uint_eq(blocks, 3);                   /* d, e, f */
	ck_assert_uint_eq(bytes, 40 + 24 + 200000);
	/* drop the global: a, b and c become leaks too (a direct, b and c indirect) */
	leak_root = NULL;
	ck_assert_int_eq(leak_check(0, &bytes, &blocks), 0);
	ck_assert_uint_eq(blocks, 6);
	ck_assert_uint_eq(bytes, 64 + 100 + 300 + 40 + 24 + 200000);
	/* free them all through the hidden pointers: nothing left */
	alloc_free(HIDE(lost[0]));
	alloc_free(HIDE(lost[1]));
	alloc_free(HIDE(lost[2]));
	ck_assert_int_eq(leak_check(0, &bytes, &blocks), 0);
	ck_assert_uint_eq(blocks, 3);
}
END_TEST

static void *volatile parked_ready;
static void *hold_on_stack(void *arg)
{
	(void)arg;
	void *volatile mine = alloc_malloc(777);        /* only in this frame */
	parked_ready = HIDE(mine);
	for (;;) pause();
	return NULL;
}

START_TEST(running_thread_holds)
{
	if (!scan_usable()) return;
	contig_ensure_init();
	G.slow_only = 1;
	pthread_t t;
	pthread_create(&t, NULL, hold_on_stack, NULL);
	while (!parked_ready) sched_yield();
	size_t bytes = 1, blocks = 1;
	ck_assert_int_eq(leak_check(0, &bytes, &blocks), 0);
	ck_assert_uint_eq(blocks, 0);
	ck_assert_uint_eq(bytes, 0);
	/* the same block, its only pointer gone from the thread: cancel it and look again */
	pthread_cancel(t);
	pthread_join(t, NULL);
	ck_assert_int_eq(leak_check(0, &bytes, &blocks), 0);
	ck_assert_uint_eq(bytes, 777);
}
END_TEST

START_TEST(off_without_tracking)
{
	contig_ensure_init();
	G.slow_only = 0;
	size_t bytes = 9, blocks = 9;
	ck_assert_int_eq(leak_check(0, &bytes, &blocks), -1);
	ck_assert_uint_eq(bytes, 0);
	ck_assert_uint_eq(blocks, 0);
}
END_TEST

Suite *leak_suite(void)
{
	Suite *s = suite_create("leak");
	TCase *tc = tcase_create("scan");
	tcase_add_test(tc, patterns);
	tcase_add_test(tc, reachability);
	tcase_add_test(tc, running_thread_holds);
	tcase_add_test(tc, off_without_tracking);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
