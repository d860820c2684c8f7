/* beacon.c - the beacon (beacon.h): one read-only page that says where the range, the page
 * descriptors, the frontier and the class tables are, and how a descriptor is laid out. */
#include "beacon.h"
#include "classes.h"
#include "os.h"
#include "range.h"
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static pagemap_beacon_t *beacon;       /* read-only once filled; NULL when it could not be mapped */

void beacon_publish(void)
{
	if (beacon || !G.pages) return;
	pagemap_beacon_t *b = os_map_meta(OS_PAGE, G.cfg.base, G.cfg.base + G.size);
	if (!b) return;                    /* only `contig map PID` misses it */
	_Static_assert(sizeof *b <= OS_PAGE, "the beacon fits its page");
	memcpy(b->magic, PAGEMAP_MAGIC, sizeof PAGEMAP_MAGIC);
	b->version = PAGEMAP_VERSION;
	b->header_size = sizeof *b;
	b->desc_size = sizeof(page_t);
	b->page_shift = PAGE_SHIFT;
	b->base = G.base;
	b->size = G.size;
	b->pages = (uint64_t)(uintptr_t)G.pages;
	b->npages = G.npages;
	b->frontier = (uint64_t)(uintptr_t)range_frontier_addr();
	b->class_size = (uint64_t)(uintptr_t)class_size;
	b->class_pages = (uint64_t)(uintptr_t)class_pages;
	b->nclass = NCLASS;
	b->pid = (uint32_t)getpid();
	b->off_kind = offsetof(page_t, kind);
	b->off_shift = offsetof(page_t, spare0);      /* always 0 now: live bits are per block */
	b->off_cls = offsetof(page_t, cls);
	b->off_flags = offsetof(page_t, flags);
	b->off_capacity = offsetof(page_t, capacity);
	b->off_hot = offsetof(page_t, hot);
	b->hot_used = offsetof(page_hot_t, used);
	b->off_block_size = offsetof(page_t, block_size);
	b->off_npages = offsetof(page_t, npages);
	b->off_head_off = offsetof(page_t, head_off);
	b->off_asked = offsetof(page_t, asked);
	b->off_usable = offsetof(page_t, usable);
	range_meta_add(b, OS_PAGE);           /* the library's own memory: the leak scan skips it */
	os_mprotect(b, OS_PAGE, PROT_READ);  /* its own r--p line: never merged with read-write metadata */
	beacon = b;
}

