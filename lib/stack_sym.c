/* stack_sym.c - report-time symbolisation of allocation stacks: each frame's module and dynamic
 * symbol from dladdr, then function, file and line (inlined callers too) from one addr2line child
 * per module, and the frame's line in the report. Never runs from malloc; capture is stack.c's. */
#include "stack.h"
#include "range.h"
#include "fmt.h"
#include "os.h"
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

extern char **environ;

/* ---- symbolisation (report time only) ---- */
#define SYM_MODULES   32u               /* modules with a symboliser child at once */
#define SYM_TIMEOUT_MS 10000            /* one batch may take this long, then the child is killed */

typedef struct symbolizer {
	char path[256];                 /* module file */
	int fd;                         /* socket to the child: addresses in, two lines per address out */
	int pid;                        /* 0: none yet; -1: cannot be used (no addr2line, it died, timed out) */
	bool stripped;                  /* the file has no .symtab: a name without a line is a dynsym's */
} symbolizer_t;

static symbolizer_t *syms;              /* SYM_MODULES entries, meta memory */
static unsigned nsyms;

static long sc(long nr, long a, long b, long c, long d) { return os_syscall6(nr, a, b, c, d, 0, 0); }

static void copy_str(char *dst, size_t n, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < n; i++) dst[i] = src[i];
	dst[i] = 0;
}

/* The exported symbol whose extent holds the call before return address pc, or NULL. dladdr (and
 * addr2line on a file without .symtab) name the nearest exported symbol below an address even when
 * it ends long before it: in a stripped program every static function would take the name of
 * whatever exported function precedes it. A symbol without a size is not trusted either. */
static const char *dynsym_holding(uintptr_t pc)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (!pc || !dladdr1((void *)(pc - 1), &info, (void **)&sym, RTLD_DL_SYMENT)) return NULL;
	if (!info.dli_sname || !info.dli_saddr || !sym) return NULL;
	return pc - 1 - (uintptr_t)info.dli_saddr < sym->st_size ? info.dli_sname : NULL;
}

/* Whether the ELF file at path has no SHT_SYMTAB section (false when it cannot be read). */
static bool elf_stripped(const char *path)
{
	int fd = (int)sc(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0) return false;
	ElfW(Ehdr) eh;
	static ElfW(Shdr) sh[32];
	bool ok = os_syscall6(SYS_pread64, fd, (long)&eh, sizeof eh, 0, 0, 0) == (long)sizeof eh &&
	          memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_shentsize == sizeof sh[0] && eh.e_shnum;
	bool symtab = false;
	for (unsigned i = 0; ok && !symtab && i < eh.e_shnum; i++) {
		if (i % 32 == 0) {
			unsigned k = eh.e_shnum - i < 32 ? eh.e_shnum - i : 32;
			long want = (long)(k * sizeof sh[0]);
			ok = os_syscall6(SYS_pread64, fd, (long)sh, want, (long)(eh.e_shoff + i * sizeof sh[0]), 0, 0) == want;
		}
		if (ok && sh[i % 32].sh_type == SHT_SYMTAB) symtab = true;
	}
	os_close(fd);
	return ok && !symtab;
}

/* addr2line's path from PATH (or the usual places), into out; 0 when found. */
static int find_addr2line(char *out, size_t n)
{
	const char *path = "/usr/bin:/bin";
	for (char **e = environ; e && *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0) { path = *e + 5; break; }
	const char *tool = "addr2line";
	while (*path) {
		const char *end = path;
		while (*end && *end != ':') end++;
		size_t len = (size_t)(end - path);
		if (len && len + 11 < n) {
			memcpy(out, path, len);
			out[len] = '/';
			copy_str(out + len + 1, n - len - 1, tool);
			if (sc(SYS_access, (long)out, X_OK, 0, 0) == 0) return 0;
		}
		path = *end ? end + 1 : end;
	}
	copy_str(out, n, "/usr/bin/addr2line");
	return sc(SYS_access, (long)out, X_OK, 0, 0) == 0 ? 0 : -1;
}

/* Start "addr2line -f -C -i -e MODULE" on a socket: a raw clone with no exit signal (the program's
 * SIGCHLD handler never sees it, no atfork handler runs), a clean environment (no LD_PRELOAD: the
 * child must not be checked itself), stderr to /dev/null. */
static void symbolizer_start(symbolizer_t *s)
{
	char tool[256];
	int sv[2];
	s->pid = -1;
	if (find_addr2line(tool, sizeof tool) != 0) return;
	if (sc(SYS_socketpair, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, (long)sv) != 0) return;
	long pid = sc(SYS_clone, 0, 0, 0, 0);
	if (pid == 0) {
		/* the child: raw system calls only, then exec */
		char *argv[] = { tool, (char *)"-f", (char *)"-C", (char *)"-i", (char *)"-e", s->path, NULL };
		char *envp[] = { (char *)"PATH=/usr/bin:/bin", (char *)"LC_ALL=C", NULL };
		/* The program may have closed fds 0-2, so the socket or /dev/null can sit there: move
		 * both above 2 first (dup2 onto itself would keep close-on-exec). */
		int sock = (int)sc(SYS_fcntl, sv[1], F_DUPFD, 3, 0);
		int null = (int)sc(SYS_openat, AT_FDCWD, (long)"/dev/null", O_WRONLY | O_CLOEXEC, 0);
		if (null >= 0 && null < 3) null = (int)sc(SYS_fcntl, null, F_DUPFD, 3, 0);
		if (sock < 0) sc(SYS_exit, 127, 0, 0, 0);
		sc(SYS_dup2, sock, 0, 0, 0);
		sc(SYS_dup2, sock, 1, 0, 0);
		if (null >= 0) sc(SYS_dup2, null, 2, 0, 0);
		sc(SYS_execve, (long)tool, (long)argv, (long)envp, 0);
		sc(SYS_exit, 127, 0, 0, 0);
	}
	os_close(sv[1]);
	if (pid < 0) { os_close(sv[0]); return; }
	s->fd = sv[0];
	s->pid = (int)pid;
}

static void symbolizer_stop(symbolizer_t *s, bool kill)
{
	if (s->pid <= 0) return;
	os_close(s->fd);
	if (kill) sc(SYS_kill, s->pid, SIGKILL, 0, 0);
	int st;
	/* EOF on its stdin ends addr2line; bounded anyway: kill after ~1 s */
	for (int i = 0; i < 100; i++) {
		if (sc(SYS_wait4, s->pid, (long)&st, WNOHANG | __WALL, 0) != 0) { s->pid = -1; return; }
		struct timespec ts = { 0, 10000000L };     /* 10 ms */
		sc(SYS_nanosleep, (long)&ts, 0, 0, 0);
	}
	sc(SYS_kill, s->pid, SIGKILL, 0, 0);
	sc(SYS_wait4, s->pid, (long)&st, __WALL, 0);
	s->pid = -1;
}

void stack_symbolizer_stop(void)
{
	for (unsigned i = 0; i < nsyms; i++) symbolizer_stop(&syms[i], false);
	nsyms = 0;
}

static symbolizer_t *symbolizer_for(const char *path)
{
	if (!syms && !(syms = meta_alloc(SYM_MODULES * sizeof *syms))) return NULL;
	for (unsigned i = 0; i < nsyms; i++)
		if (strcmp(syms[i].path, path) == 0) return syms[i].pid > 0 ? &syms[i] : NULL;
	symbolizer_t *s;
	if (nsyms < SYM_MODULES) s = &syms[nsyms++];
	else { s = &syms[SYM_MODULES - 1]; symbolizer_stop(s, false); }
	copy_str(s->path, sizeof s->path, path);
	s->pid = 0;
	s->stripped = elf_stripped(path);
	symbolizer_start(s);
	return s->pid > 0 ? s : NULL;
}

static void put_hex(char *buf, size_t *len, uintptr_t v)
{
	char t[20];
	int i = 0;
	do t[i++] = "0123456789abcdef"[v & 15]; while ((v >>= 4) != 0);
	buf[(*len)++] = '0';
	buf[(*len)++] = 'x';
	while (i) buf[(*len)++] = t[--i];
	buf[(*len)++] = '\n';
}

/* One answer of addr2line: "FUNC\nFILE:LINE\n"; "??" and "??:0" when unknown. */
static void parse_answer(const char *func, const char *loc, stack_sym_t *out)
{
	if (strcmp(func, "??") != 0) copy_str(out->func, sizeof out->func, func);
	const char *colon = strrchr(loc, ':');
	if (!colon || strncmp(loc, "??", 2) == 0) return;
	unsigned line = 0;
	for (const char *d = colon + 1; *d >= '0' && *d <= '9'; d++) line = line * 10 + (unsigned)(*d - '0');
	if (!line) return;
	size_t flen = (size_t)(colon - loc);
	if (flen >= sizeof out->file) flen = sizeof out->file - 1;
	memcpy(out->file, loc, flen);
	out->file[flen] = 0;
	out->line = line;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	sc(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0, 0);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Ask s for the k frames in idx[] (offsets in their module): writes and reads interleaved, so that
 * neither side blocks on a full socket; the whole batch is bounded by SYM_TIMEOUT_MS. With -i an
 * address gets one answer, then one more per function it was inlined into: each address is
 * followed by the address 0, whose one answer ("??") ends the list (an address's first answer is
 * its own even when it is "??"). */
static void symbolizer_ask(symbolizer_t *s, const uintptr_t *pcs, const size_t *idx, size_t k, stack_sym_t *out)
{
	static char wbuf[4096], rbuf[8192];
	size_t sent = 0, wlen = 0, woff = 0, rlen = 0, answered = 0;
	char first[sizeof out->func];
	int have_first = 0;
	unsigned pairs = 0;                 /* answers read for the current address */
	uint64_t deadline = now_ms() + SYM_TIMEOUT_MS;
	while (answered < k) {
		if (woff == wlen && sent < k) {
			wlen = woff = 0;
			while (sent < k && wlen + 48 < sizeof wbuf) {
				/* the call instruction, not the return address */
				put_hex(wbuf, &wlen, out[idx[sent]].offset ? out[idx[sent]].offset - 1 : 0);
				put_hex(wbuf, &wlen, 0);
				sent++;
			}
		}
		struct pollfd p = { .fd = s->fd, .events = POLLIN | (woff < wlen ? POLLOUT : 0) };
		uint64_t now = now_ms();
		if (now >= deadline) goto fail;
		struct timespec ts = { (time_t)((deadline - now) / 1000), (long)((deadline - now) % 1000) * 1000000 };
		long r = sc(SYS_ppoll, (long)&p, 1, (long)&ts, 0);
		if (r < 0 && r != -EINTR) goto fail;
		if (r <= 0) continue;
		if (p.revents & POLLOUT) {
			long w = sc(SYS_sendto, s->fd, (long)(wbuf + woff), (long)(wlen - woff), MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w < 0 && w != -EAGAIN && w != -EINTR) goto fail;
			if (w > 0) woff += (size_t)w;
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			long n = sc(SYS_recvfrom, s->fd, (long)(rbuf + rlen), (long)(sizeof rbuf - 1 - rlen), MSG_DONTWAIT);
			if (n == 0 || (n < 0 && n != -EAGAIN && n != -EINTR)) goto fail;
			if (n > 0) rlen += (size_t)n;
			char *line = rbuf, *nl;
			while (answered < k && (nl = memchr(line, '\n', (size_t)(rbuf + rlen - line))) != NULL) {
				*nl = 0;
				if (!have_first) { copy_str(first, sizeof first, line); have_first = 1; }
				else {
					char *disc = strstr(line, " (discriminator");
					if (disc) *disc = 0;
					stack_sym_t *o = &out[idx[answered]];
					if (pairs == 0) {
						parse_answer(first, line, o);
						if (s->stripped && !o->line && o->func[0] && !dynsym_holding(pcs[idx[answered]]))
							o->func[0] = 0;
						pairs = 1;
					} else if (strcmp(first, "??") == 0 && strncmp(line, "??", 2) == 0) {
						answered++;             /* address 0's answer: the list ended */
						pairs = 0;
					} else if (o->ninl < STACK_INLINED) {
						stack_sym_t t;
						memset(t.func, 0, sizeof t.func);
						memset(t.file, 0, sizeof t.file);
						t.line = 0;
						parse_answer(first, line, &t);
						stack_inl_t *c = &o->inl[o->ninl++];
						copy_str(c->func, sizeof c->func, t.func);
						copy_str(c->file, sizeof c->file, t.file);
						c->line = t.line;
					}
					have_first = 0;
				}
				line = nl + 1;
			}
			rlen = (size_t)(rbuf + rlen - line);
			memmove(rbuf, line, rlen);
			if (rlen == sizeof rbuf - 1) rlen = 0;          /* a line longer than the buffer: drop it */
		}
	}
	return;
fail:
	symbolizer_stop(s, true);
	s->pid = -1;
}

static void module_path(const char *fname, char *out, size_t n)
{
	if (fname && fname[0] == '/') { copy_str(out, n, fname); return; }
	/* the main program: dladdr gives "" or argv[0] */
	long len = sc(SYS_readlink, (long)"/proc/self/exe", (long)out, (long)n - 1, 0);
	if (len > 0) out[len] = 0;
	else copy_str(out, n, fname ? fname : "");
}

int stack_symbolize(const uintptr_t *pcs, size_t n, stack_sym_t *out)
{
	if (!out || (n && !pcs)) return -1;
	static size_t idx[1024];
	static bool used[1024];
	for (size_t i = 0; i < n; i++) {
		stack_sym_t *o = &out[i];
		memset(o, 0, sizeof *o);
		Dl_info info;
		struct link_map *lm = NULL;
		if (!pcs[i] || !dladdr1((void *)(pcs[i] - 1), &info, (void **)&lm, RTLD_DL_LINKMAP)) {
			o->offset = pcs[i];
			continue;
		}
		module_path(info.dli_fname, o->module, sizeof o->module);
		o->offset = pcs[i] - (lm ? lm->l_addr : (uintptr_t)info.dli_fbase);
		const char *name = dynsym_holding(pcs[i]);
		if (name) copy_str(o->func, sizeof o->func, name);
	}
	/* one batch per module, at most 1024 frames per batch */
	for (size_t start = 0; start < n; start += 1024) {
		size_t end = n - start > 1024 ? start + 1024 : n;
		memset(used, 0, sizeof used);
		for (size_t i = start; i < end; i++) {
			if (used[i - start] || !out[i].module[0]) continue;
			size_t k = 0;
			for (size_t j = i; j < end; j++)
				if (!used[j - start] && strcmp(out[j].module, out[i].module) == 0) {
					used[j - start] = true;
					idx[k++] = j;
				}
			symbolizer_t *s = symbolizer_for(out[i].module);
			if (s) symbolizer_ask(s, pcs, idx, k, out);
		}
	}
	return 0;
}

size_t stack_format(char *buf, size_t n, unsigned i, uintptr_t pc, const stack_sym_t *s)
{
	fmtbuf_t b;
	if (!n) return 0;
	fmt_init(&b, buf, n);
	fmt_str(&b, "    #");
	fmt_dec(&b, i);
	fmt_char(&b, ' ');
	fmt_hex(&b, pc);
	if (s && s->func[0]) {
		fmt_str(&b, " in ");
		fmt_str(&b, s->func);
	}
	if (s && s->file[0] && s->line) {
		fmt_char(&b, ' ');
		fmt_str(&b, s->file);
		fmt_char(&b, ':');
		fmt_dec(&b, s->line);
	} else if (s && s->module[0]) {
		fmt_str(&b, " (");
		fmt_str(&b, s->module);
		fmt_str(&b, "+");
		fmt_hex(&b, s->offset);
		fmt_char(&b, ')');
	} else if (!s || !s->func[0]) {
		fmt_str(&b, " (<unknown module>)");
	}
	return fmt_len(&b);
}
