#!/usr/bin/python3
"""contig - run a program on libcontig (run), say what the library would do here (info), and show
a process's heap range as the kernel and the library see it (map), as text or as a picture.

`make` generates scripts/contig from this file (scripts/local.mk) with the library directory, the
version and the python3 it runs under filled in. `run` and `info` use the standard library only;
`map` draws with matplotlib when asked for a picture (-o FILE.png).
"""

import errno
import json
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import time

ME = "contig"
INSTALLED_LIB = "@libdir@/libcontig.so"
VERSION = "@VERSION@"
HERE = os.path.dirname(os.path.abspath(__file__))

DEFAULT_BASE = 0xf800000000
DEFAULT_SIZE = 64 << 30
USER_TOP = 0x7fffffff0000       # one past the last granule the kernel maps (its top is 0x7ffffffff000)
MAX_SIZE = 64 << 40
MIN_BASE = 0x10000
MIN_SIZE = 1 << 20
GRANULE = 1 << 16
MiB = 1 << 20

USAGE = """\
usage: contig [OPTIONS] [--] COMMAND [ARGS...]   run COMMAND with libcontig preloaded
       contig info [OPTIONS]                    what the library would do here, and why
       contig map [MAP OPTIONS] [OPTIONS] PID   PID's heap range: the kernel's and the library's view
       contig map [MAP OPTIONS] [OPTIONS] -- COMMAND [ARGS...]
                                                run COMMAND under the library, sample it, map it at exit
       contig --help | --version

options (each sets the CONTIG_* variable of the same name; see libcontig(3)):
  --base ADDR               first address of the range (0xf800000000)
  --size SIZE               length of the range, suffix K M G T (64G)
  --mode auto|reserve|lazy  how the range is reserved (auto)
  --limit SIZE|cgroup|none  cap on committed heap bytes (none)
  --on-collision skip|abort what to do when a foreign mapping is in the range (skip)
  --fallback none|system    serve outside the range when it is full (none)
  --purge-ms MS             how long freed pages stay resident (100)
  --mmap 0|1|all            which anonymous mmap calls the range serves (1)
  --stats[=text|json]       print statistics at exit
  --stats-file FILE         write them to FILE instead of stderr
  --leaks[=report|error]    report leaked blocks at exit; error: exit status 23 if any
  --leaks-suppress FILE     leak suppressions (CONTIG_LEAKS_SUPPRESS; implies --leaks=report)
  --verbose                 log the library's decisions on stderr
  --help, --version

map options:
  -o FILE, --png FILE       draw the map into FILE (PNG, or any format matplotlib knows by the
                            suffix: .svg, .pdf); needs python3-matplotlib
  --text                    print the map as text (the default when no -o is given)
  --watch SECONDS           with PID: sample it for SECONDS for the timeline (0: one snapshot)
  --interval MS             sampling period for the timeline (25)
  --all                     list every run in the text, not only the first 40

The library is $CONTIG_LIB if set, else the build tree next to this script, else
%s, else the one ldconfig knows.
"""

# option -> (variable, checker or None for flags); checkers return the value to set or raise
VALUE_OPTS = ("--base", "--size", "--mode", "--limit", "--on-collision", "--fallback", "--purge-ms",
              "--mmap", "--stats-file", "--leaks-suppress")
MAP_VALUE_OPTS = ("-o", "--png", "--watch", "--interval")
MAP_FLAGS = ("--text", "--all")


class UsageError(Exception):
    """A bad command line: message on stderr, exit status 2."""


class Failure(Exception):
    """The launcher's own failure (status in .status)."""

    def __init__(self, msg, status=125):
        Exception.__init__(self, msg)
        self.status = status


def version():
    if not VERSION.startswith("@"):
        return VERSION
    try:
        text = slurp(os.path.join(HERE, "..", "configure.ac"))
    except OSError:
        return "unknown"
    m = re.search(r"^AC_INIT\(\[[^]]*\], *\[([^]]*)\]", text, re.M)
    return m.group(1) if m else "unknown"


def slurp(path, mode="r"):
    """The whole file, closed again."""
    with open(path, mode) as f:
        return f.read()


def human(n):
    """Bytes the way the library prints them: 64.0 GiB."""
    whole, tenth, u = int(n), 0, 0
    while whole >= 1024 and u < 4:
        tenth = (whole % 1024) * 10 // 1024
        whole //= 1024
        u += 1
    if not u:
        return "%d B" % whole
    return "%d.%d %s" % (whole, tenth, ["B", "KiB", "MiB", "GiB", "TiB"][u])


def short_size(n):
    """16, 3K, 128K: block sizes as labels."""
    if n >= 1024 and n % 1024 == 0:
        return "%dK" % (n // 1024)
    if n >= 1024:
        return "%.1fK" % (n / 1024.0)
    return str(n)


def parse_size(s):
    m = re.fullmatch(r"[ \t]*([0-9]+)(?:([kKmMgGtT])[iI]?)?[bB]?[ \t]*", s)
    if not m:
        return None
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[(m.group(2) or "").lower()]


def parse_addr(s):
    m = re.fullmatch(r"[ \t]*(0[xX][0-9a-fA-F]+|[0-9]+)[ \t]*", s)
    return int(m.group(1), 0) if m else None


# ---------------------------------------------------------------- the command line
def check_value(opt, val):
    """The CONTIG_* variable and value an option sets; UsageError when the value has the wrong form
    (the library checks alignment and bounds)."""
    def one_of(words, what):
        if val not in words:
            raise UsageError("%s %s: not %s" % (opt, val, what))
        return val
    if opt == "--base":
        if parse_addr(val) is None or val.strip() != val:
            raise UsageError("--base %s: not an address (try 0xf800000000)" % val)
        return "CONTIG_BASE", val
    if opt == "--size":
        if parse_size(val) is None or val.strip() != val:
            raise UsageError("--size %s: not a size (try 512M or 16G)" % val)
        return "CONTIG_SIZE", val
    if opt == "--mode":
        return "CONTIG_MODE", one_of(("auto", "reserve", "lazy"), "auto, reserve or lazy")
    if opt == "--limit":
        if val not in ("cgroup", "none") and (parse_size(val) is None or val.strip() != val):
            raise UsageError("--limit %s: not a size, cgroup or none" % val)
        return "CONTIG_LIMIT", val
    if opt == "--on-collision":
        return "CONTIG_ON_COLLISION", one_of(("skip", "abort"), "skip or abort")
    if opt == "--fallback":
        return "CONTIG_FALLBACK", one_of(("none", "system"), "none or system")
    if opt == "--purge-ms":
        if not re.fullmatch(r"[0-9]+", val):
            raise UsageError("--purge-ms %s: not a number of milliseconds" % val)
        return "CONTIG_PURGE_MS", val
    if opt == "--mmap":
        return "CONTIG_MMAP", one_of(("0", "1", "all"), "0, 1 or all")
    if opt == "--stats-file":
        if not val:
            raise UsageError("--stats-file needs a file name")
        return "CONTIG_STATS_FILE", val
    if opt == "--leaks-suppress":
        if not val:
            raise UsageError("--leaks-suppress needs a file name")
        return "CONTIG_LEAKS_SUPPRESS", val
    raise UsageError("unknown option %s" % opt)


class Args(object):
    """What the command line says: the subcommand, the CONTIG_* variables to set, the operands."""

    def __init__(self):
        self.what = "run"           # run, info, map, help, version
        self.env = {}               # CONTIG_* set by options
        self.explicit = []          # the variables set by options, in order
        self.operands = []          # the command (run, map --) or the PID (map)
        self.dashdash = False       # map: "--" came before the operands
        self.output = None          # map: -o FILE
        self.text = False           # map: --text
        self.watch = 0.0            # map PID: seconds of sampling
        self.interval = 0.025       # map: seconds between samples
        self.all_runs = False       # map: every run in the text


def parse_args(argv):
    """Parse the launcher's arguments (without the program name). Options end at the first
    argument that does not start with '-' or after '--'; raises UsageError."""
    a = Args()
    rest = list(argv)
    if rest and rest[0] in ("info", "map"):
        a.what = rest.pop(0)
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--":
            a.dashdash = True
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        opt, has_val, val = arg, False, None
        if arg.startswith("--") and "=" in arg:
            opt, val = arg.split("=", 1)
            has_val = True
        opt = {"-h": "--help", "-V": "--version"}.get(opt, opt)
        takes = opt in VALUE_OPTS or opt in MAP_VALUE_OPTS
        if takes and not has_val:
            if i + 1 >= len(rest):
                raise UsageError("option %s needs a value" % opt)
            val = rest[i + 1]
            i += 1
        i += 1
        if opt in ("--help", "--version", "--verbose") + MAP_FLAGS and has_val:
            raise UsageError("%s takes no value" % opt)
        if opt == "--help":
            a.what = "help"
            return a
        if opt == "--version":
            a.what = "version"
            return a
        if opt in MAP_VALUE_OPTS or opt in MAP_FLAGS:
            if a.what != "map":
                raise UsageError("%s is an option of '%s map'" % (opt, ME))
            if opt in ("-o", "--png"):
                if not val:
                    raise UsageError("%s needs a file name" % opt)
                a.output = val
            elif opt == "--text":
                a.text = True
            elif opt == "--all":
                a.all_runs = True
            else:
                try:
                    n = float(val)
                except ValueError:
                    n = -1.0
                if n < 0 or (opt == "--interval" and not 1 <= n <= 10000):
                    raise UsageError("%s %s: not a number of %s" % (opt, val, "seconds" if opt == "--watch" else
                                                                    "milliseconds from 1 to 10000"))
                if opt == "--watch":
                    a.watch = n
                else:
                    a.interval = n / 1000.0
            continue
        if opt == "--stats":
            v = "1" if not has_val else val
            if v not in ("1", "text", "json"):
                raise UsageError("--stats=%s: not text or json" % v)
            a.env["CONTIG_STATS"] = "1" if v in ("1", "text") else "json"
            a.explicit.append("CONTIG_STATS")
            continue
        if opt == "--leaks":
            v = "report" if not has_val else val
            if v not in ("report", "error"):
                raise UsageError("--leaks=%s: not report or error" % v)
            a.env["CONTIG_LEAKS"] = v
            a.explicit.append("CONTIG_LEAKS")
            continue
        if opt == "--verbose":
            a.env["CONTIG_VERBOSE"] = "1"
            a.explicit.append("CONTIG_VERBOSE")
            continue
        if opt not in VALUE_OPTS:
            raise UsageError("unknown option %s" % opt)
        var, v = check_value(opt, val)
        a.env[var] = v
        a.explicit.append(var)
    a.operands = rest[i:]
    if a.what == "run" and not a.operands:
        raise UsageError("no command to run")
    if a.what == "info" and a.operands:
        raise UsageError("info takes no operands: %s" % " ".join(a.operands))
    if a.what == "map":
        if a.dashdash:
            if not a.operands:
                raise UsageError("map --: no command to run")
        elif len(a.operands) != 1:
            raise UsageError("map needs a PID, or -- COMMAND [ARGS...]")
        elif not re.fullmatch(r"[0-9]+", a.operands[0]):
            raise UsageError("map %s: not a PID (to run a command: %s map -- %s)"
                             % (a.operands[0], ME, a.operands[0]))
    return a


def child_env(args, base=None):
    """The environment for the command: the caller's, the options' CONTIG_*, and
    CONTIG_LEAKS=report when only suppressions were given."""
    env = dict(os.environ if base is None else base)
    env.update(args.env)
    if "CONTIG_LEAKS_SUPPRESS" in args.env and "CONTIG_LEAKS" not in env:
        env["CONTIG_LEAKS"] = "report"
    return env


# ---------------------------------------------------------------- finding the library
def find_lib(environ=None):
    """(path, how it was found); Failure when there is none."""
    environ = os.environ if environ is None else environ
    lib = environ.get("CONTIG_LIB")
    if lib:
        if not os.path.isfile(lib):
            raise Failure("CONTIG_LIB=%s: no such file" % lib)
        return lib, "$CONTIG_LIB"
    for c in (os.path.join(HERE, "..", "preload", ".libs", "libcontig.so"),
              os.path.join(HERE, "..", "build", "preload", ".libs", "libcontig.so")):
        if os.path.isfile(c):
            return os.path.realpath(c), "the build tree"
    if not INSTALLED_LIB.startswith("@") and os.path.isfile(INSTALLED_LIB):
        return INSTALLED_LIB, "the installed one"
    for ldconfig in ("ldconfig", "/sbin/ldconfig"):
        try:
            out = subprocess.run([ldconfig, "-p"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 timeout=10).stdout.decode(errors="replace")
        except (OSError, subprocess.SubprocessError):
            continue
        for line in out.splitlines():
            m = re.match(r"\s*libcontig\.so[.0-9]* \(.*=>\s*(\S+)", line)
            if m and os.path.isfile(m.group(1)):
                return m.group(1), "ldconfig -p"
        break
    raise Failure("cannot find libcontig.so (set CONTIG_LIB to its path)")


def preload_env(lib, env):
    """LD_PRELOAD with this library first, and libcontig-deepbind.so beside it when it is there
    (dlopen without RTLD_DEEPBIND, so that libraries opened so, such as PHP's extensions, get
    libcontig's malloc); other copies of libcontig already listed are dropped: two copies in one
    process would both try to own the range."""
    env = dict(env)
    rest = [e for e in re.split(r"[:\s]+", env.get("LD_PRELOAD", ""))
            if e and not os.path.basename(e).startswith(("libcontig.so", "libcontig-deepbind.so"))]
    shim = os.path.join(os.path.dirname(lib), "libcontig-deepbind.so")
    env["LD_PRELOAD"] = ":".join([lib] + ([shim] if os.path.isfile(shim) else []) + rest)
    return env


def run(args):
    lib, _ = find_lib()
    env = preload_env(lib, child_env(args))
    try:
        try:
            os.execvpe(args.operands[0], args.operands, env)
        except OSError as e:
            if e.errno != errno.ENOEXEC:
                raise
            # a script without "#!": run by the shell, as execvp(3) and shells do
            prog = args.operands[0]
            if "/" not in prog:
                prog = shutil.which(prog, path=env.get("PATH", os.defpath)) or prog
            os.execve("/bin/sh", ["/bin/sh", prog] + args.operands[1:], env)
    except OSError as e:
        sys.stderr.write("%s: %s: %s\n" % (ME, args.operands[0], e.strerror))
        return 127 if isinstance(e, FileNotFoundError) else 126


# ---------------------------------------------------------------- info
def effective_config(env):
    """What lib/config.c makes of these CONTIG_* variables: (settings, complaints)."""
    c = dict(base=DEFAULT_BASE, size=DEFAULT_SIZE, mode="auto", on_collision="skip", fallback="none",
             limit="none", purge_ms=100, mmap="1", stats="0", stats_file="", leaks="0", verbose="0",
             check_maps="1")
    why = []
    v = env.get("CONTIG_VERBOSE")
    if v is not None:
        c["verbose"] = "0" if v.strip(" \t") in ("0", "", "no", "false", "off") else "1"
    v = env.get("CONTIG_SIZE")
    if v is not None:
        s = parse_size(v)
        if s is None:
            why.append('CONTIG_SIZE="%s" is not a size' % v)
        elif s < MIN_SIZE:
            why.append('CONTIG_SIZE="%s" is smaller than the minimum 1M' % v)
        elif s > MAX_SIZE:
            c["size"] = MAX_SIZE
            why.append('CONTIG_SIZE="%s" is larger than the largest range the library supports, 64T' % v)
        else:
            c["size"] = s & ~(GRANULE - 1)
            if s % GRANULE:
                why.append('CONTIG_SIZE="%s" is rounded down to the 64K granule' % v)
    v = env.get("CONTIG_BASE")
    if v is not None:
        a = parse_addr(v)
        if a is None:
            why.append('CONTIG_BASE="%s" is not an address' % v)
        elif a >= USER_TOP or (a + GRANULE - 1) & ~(GRANULE - 1) >= USER_TOP:
            why.append('CONTIG_BASE="%s" is beyond the last address the kernel maps, 0x7ffffffeffff' % v)
        elif a < MIN_BASE:
            why.append('CONTIG_BASE="%s" is below the lowest mappable address 0x10000' % v)
        else:
            c["base"] = (a + GRANULE - 1) & ~(GRANULE - 1)
            if a % GRANULE:
                why.append('CONTIG_BASE="%s" is rounded up to the 64K granule' % v)
    if c["base"] + c["size"] > USER_TOP:
        c["size"] = (USER_TOP - c["base"]) & ~(GRANULE - 1)
        why.append("CONTIG_SIZE is clipped to end at the last address the kernel maps")
    choices = dict(CONTIG_MODE=("mode", ("auto", "reserve", "lazy")),
                   CONTIG_ON_COLLISION=("on_collision", ("skip", "abort")),
                   CONTIG_FALLBACK=("fallback", ("none", "system")),
                   CONTIG_MMAP=("mmap", ("1", "all", "0")),
                   CONTIG_STATS=("stats", ("0", "1", "json")),
                   CONTIG_LEAKS=("leaks", ("0", "report", "error")),
                   CONTIG_CHECK_MAPS=("check_maps", ("1", "0")))
    for var, (key, words) in choices.items():
        v = env.get(var)
        if v is None:
            continue
        if v.strip(" \t") in words:
            c[key] = v.strip(" \t")
        else:
            why.append('%s="%s" is not one of %s' % (var, v, ", ".join(words)))
    v = env.get("CONTIG_LIMIT")
    if v is not None:
        if v in ("none", "0", ""):
            c["limit"] = "none"
        elif v == "cgroup" or (parse_size(v) or 0) > 0:
            c["limit"] = v
        else:
            why.append('CONTIG_LIMIT="%s" is not a size or "cgroup"' % v)
    v = env.get("CONTIG_PURGE_MS")
    if v is not None:
        if re.fullmatch(r"[0-9]+", v) and int(v) <= 60000:
            c["purge_ms"] = int(v)
        else:
            why.append('CONTIG_PURGE_MS="%s" is not a number of milliseconds from 0 to 60000' % v)
    c["stats_file"] = env.get("CONTIG_STATS_FILE", "")
    return c, why


def cgroup_limit():
    """lib/cgroup.c's discovery: (limit in bytes or 0 for none, the file, the cgroup version)."""
    v1 = v2 = None
    try:
        for line in slurp("/proc/self/cgroup").splitlines():
            parts = line.split(":", 2)
            if len(parts) != 3:
                continue
            if parts[0] == "0" and parts[1] == "":
                v2 = parts[2]
            elif "memory" in parts[1].split(","):
                v1 = parts[2]
        mounts = slurp("/proc/self/mountinfo").splitlines()
    except OSError:
        return 0, None, None
    for line in mounts:
        f = line.split()
        if "-" not in f[6:]:
            continue
        dash = f.index("-", 6)
        root, mnt, fstype = f[3], f[4], f[dash + 1] if dash + 1 < len(f) else ""
        sup = f[dash + 3] if dash + 3 < len(f) else ""
        if v1 is not None and fstype == "cgroup" and "memory" in sup.split(","):
            path, leaf, ver = v1, "/memory.limit_in_bytes", "v1"
        elif v2 is not None and v1 is None and fstype == "cgroup2":
            path, leaf, ver = v2, "/memory.max", "v2"
        else:
            continue
        if root != "/" and path.startswith(root):
            path = path[len(root):]
        if path == "/":
            path = ""
        where = mnt + path + leaf
        try:
            val = slurp(where).strip()
        except OSError:
            return 0, where + " (unreadable)", ver
        if val.startswith("max") or not val.isdigit() or int(val) >= 1 << 62:
            return 0, where, ver
        return int(val), where, ver
    return 0, None, None


def cgroup_heap_limit(lim):
    head = max(lim // 8, 16 * MiB)
    eff = lim - head if lim > 2 * head else lim // 2
    return max(eff & ~(GRANULE - 1), GRANULE)


def auto_headroom(rl):
    return max(rl - rl // 8, 256 * MiB)


def range_under_limit(size, rl):
    """lib/range.c: under RLIMIT_AS the range is cut to eight times the limit, at least 4 GiB."""
    return size if rl is None else min(size, max(8 * rl, 4 << 30) & ~(GRANULE - 1))


def info(lib, how):
    env = dict(os.environ)
    cfg, why = effective_config(env)
    print("%s %s: what libcontig would do here, and why" % (ME, version()))
    print()
    print("library        %s (%s)" % (lib, how))
    print()
    print("configuration (CONTIG_* from the environment, else the defaults)")
    rows = [("CONTIG_BASE", "%#x" % cfg["base"]),
            ("CONTIG_SIZE", "%s (%d bytes)" % (human(cfg["size"]), cfg["size"])),
            ("CONTIG_MODE", cfg["mode"]), ("CONTIG_ON_COLLISION", cfg["on_collision"]),
            ("CONTIG_FALLBACK", cfg["fallback"]), ("CONTIG_LIMIT", cfg["limit"]),
            ("CONTIG_PURGE_MS", str(cfg["purge_ms"])), ("CONTIG_MMAP", cfg["mmap"]),
            ("CONTIG_STATS", cfg["stats"]), ("CONTIG_STATS_FILE", cfg["stats_file"] or "(stderr)"),
            ("CONTIG_LEAKS", cfg["leaks"]), ("CONTIG_VERBOSE", cfg["verbose"]),
            ("CONTIG_CHECK_MAPS", cfg["check_maps"])]
    for var, val in rows:
        src = "environment" if var in env else "default"
        if var == "CONTIG_STATS_FILE" and not cfg["stats_file"]:
            src = "default"
        print("  %-20s %-34s %s" % (var, val, src))
    for w in why:
        print("  ! %s; the library uses the value above" % w)
    base, size = cfg["base"], cfg["size"]

    print()
    print("limits")
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    rl = None if soft == resource.RLIM_INFINITY else soft
    full = size
    size = range_under_limit(size, rl)          # under any limit, in every mode
    end = base + size
    if rl is None:
        print("  RLIMIT_AS      unlimited (ulimit -v: unlimited)")
    else:
        print("  RLIMIT_AS      %s (ulimit -v: %d KiB)" % (human(rl), rl // 1024))
    lim, where, ver = cgroup_limit()
    if where is None:
        print("  memory cgroup  none found (/proc/self/cgroup, /proc/self/mountinfo)")
    elif not lim:
        print("  memory cgroup  %s %s: no limit" % (ver, where))
    else:
        print("  memory cgroup  %s %s: %s" % (ver, where, human(lim)))
    if lim:
        eff = cgroup_heap_limit(lim)
        print("                 CONTIG_LIMIT=cgroup caps the heap at %s (headroom %s: max(limit/8, 16 MiB))"
              % (human(eff), human(lim - eff)))
    else:
        print("                 CONTIG_LIMIT=cgroup would mean no limit here")
    if cfg["limit"] not in ("none", "cgroup"):
        print("  CONTIG_LIMIT   caps committed heap bytes at %s" % human(parse_size(cfg["limit"])))

    # Ask the library itself, in a short-lived probe process under the same environment.
    fd, jpath = tempfile.mkstemp(prefix="contig-info.", suffix=".json")
    os.close(fd)
    penv = preload_env(lib, env)
    penv.update(CONTIG_STATS="json", CONTIG_STATS_FILE=jpath, CONTIG_VERBOSE="1", CONTIG_LEAKS="0")
    probe = shutil.which("true") or "/bin/true"
    try:
        r = subprocess.run([probe], env=penv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30)
        said = r.stderr.decode(errors="replace").splitlines()
        st = json.loads(slurp(jpath)) if os.path.getsize(jpath) else None
        rc = r.returncode
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        said, st, rc = [str(e)], None, -1
    finally:
        os.unlink(jpath)

    print()
    print("mode")
    mode = cfg["mode"]
    if size < full:
        print("  the range is cut to %s, eight times RLIMIT_AS (at least 4 GiB), in every mode: the heap" % human(size))
        print("  cannot outgrow the limit, and the page descriptors take 1/1024 of the range")
    if mode == "reserve":
        print("  reserve: maps the whole range PROT_NONE (MAP_NORESERVE) at start; if RLIMIT_AS refuses")
        print("  it, keeps what it got and grows lazily beyond")
    elif mode == "lazy":
        print("  lazy: reserves nothing; grows with MAP_FIXED_NOREPLACE, 4 MiB or more at a time")
    elif rl is None:
        print("  auto: no RLIMIT_AS, so it reserves the whole range (%s) PROT_NONE at start" % human(size))
    else:
        head = auto_headroom(rl)
        print("  auto: RLIMIT_AS %s - headroom %s (max(RLIMIT_AS*7/8, 256 MiB))" % (human(rl), human(head)))
        print("        - the address space the program already uses at start")
        room = rl - head
        if room >= size:
            print("        leaves room for the whole range (%s) if the program starts small" % human(size))
        elif room <= 0:
            print("        leaves nothing: it reserves nothing and grows lazily (MAP_FIXED_NOREPLACE)")
        else:
            print("        = at most %s of the %s range reserved; it grows lazily beyond" % (human(room), human(size)))
    if st:
        part = ("the whole range" if st["reserved"] == st["size"] else
                "nothing" if st["reserved"] == 0 else "%s of %s" % (human(st["reserved"]), human(st["size"])))
        print("  measured: %s under the library reserved %s (mode %s), %d collision(s) at start"
              % (probe, part, st["mode"], st["collision_count"]))
        if mode == "auto" and rl is not None and 0 < st["reserved"] < st["size"]:
            print("            so about %s was in use at start: the page descriptors (1/1024 of the"
                  % human(max(rl - auto_headroom(rl) - st["reserved"], 0)))
            print("            range, %s) and the program" % human(st["size"] // 1024))
        for c in st.get("collisions", []):
            print("    ! collision %s +%s found by %s" % (c["addr"], human(c["len"]), c["route"]))
    else:
        print("  measured: the probe (%s under the library) failed, status %s" % (probe, rc))
    for line in said:
        print("  library says: %s" % line)

    print()
    print("range")
    print("  %#x-%#x (%s)" % (base, end, human(size)))
    mine = overlapping(parse_maps(slurp("/proc/self/maps")), base, end)
    if not mine:
        print("  free in a new process: nothing mapped there in /proc/%d/maps (python3 started by %s)"
              % (os.getpid(), ME))
    else:
        print("  NOT free in a new process (/proc/%d/maps): the library will skip these pages" % os.getpid())
        for m in mine:
            print("    ! %#x-%#x %s %s" % (m[0], m[1], m[2], m[4]))
    return 0 if st else 1


# ---------------------------------------------------------------- /proc/PID/maps: the kernel's view
def parse_maps(text):
    """Entries (lo, hi, perms, inode, name) of a /proc/PID/maps text."""
    out = []
    for line in text.splitlines():
        f = line.split(None, 5)
        if len(f) < 5 or "-" not in f[0]:
            continue
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        out.append((lo, hi, f[1], f[4], f[5].strip() if len(f) > 5 else ""))
    return out


def overlapping(maps, lo, hi):
    return [m for m in maps if m[0] < hi and m[1] > lo]


KCLASSES = [  # the kernel's view of the range: name, meaning
    ("usable", "rw-p anonymous: committed or usable heap and served mmaps"),
    ("reserved", "---p anonymous: reserved, not yet usable"),
    ("served", "anonymous, other protections: served mmaps, caller's mprotect"),
    ("foreign", "file-backed, named, or a recorded collision: not the library's"),
    ("unmapped", "nothing mapped: beyond the lazily grown part"),
]


def classify(m, colls):
    lo, hi, perms, inode, name = m
    for c in colls:
        if c[0] < hi and c[1] > lo:
            return "foreign", ("COLLISION found by %s %s" % (c[2], name)).rstrip()
    if name or inode != "0":
        return "foreign", name or "inode " + inode
    if perms[:3] == "rw-" and perms[3] == "p":
        return "usable", ""
    if perms == "---p":
        return "reserved", ""
    return "served", ""


def segments(maps, base, end, colls):
    """The range cut into (lo, hi, class, perms, note), gaps included, in address order."""
    out, at = [], base
    for m in sorted(overlapping(maps, base, end)):
        lo, hi = max(m[0], base), min(m[1], end)
        if lo > at:
            out.append((at, lo, "unmapped", "", ""))
        cls, note = classify(m, colls)
        out.append((lo, hi, cls, m[2], note))
        at = hi
    if at < end:
        out.append((at, end, "unmapped", "", ""))
    return out


def print_kernel_view(maps, base, end, segs, out):
    w = out.write
    w("the kernel's view: /proc/PID/maps inside the range\n")
    w("range %#x-%#x (%s)\n\n" % (base, end, human(end - base)))
    fmt = "%2s %-9s %#014x-%#014x %10s  %-4s  %s"
    below = [m for m in maps if m[1] <= base]
    above = [m for m in maps if m[0] >= end]
    if below:
        m = max(below)
        w(fmt % ("", "below", m[0], m[1], human(m[1] - m[0]), m[2], m[4] or "(anonymous)") + "\n")
    totals = {n: [0, 0] for n, _ in KCLASSES}
    for lo, hi, cls, perms, note in segs:
        totals[cls][0] += hi - lo
        totals[cls][1] += 1
        w((fmt % ("!!" if cls == "foreign" else "", cls.upper() if cls == "foreign" else cls,
                  lo, hi, human(hi - lo), perms, note)).rstrip() + "\n")
    if above:
        m = min(above)
        w(fmt % ("", "above", m[0], m[1], human(m[1] - m[0]), m[2], m[4] or "(anonymous)") + "\n")
    w("\ntotals inside the range\n")
    for name, meaning in KCLASSES:
        b, n = totals[name]
        word = ("gap" if name == "unmapped" else "mapping") + ("" if n == 1 else "s")
        w("  %-9s %10s  %4d %-8s  %s\n" % (name, human(b), n, word, meaning))
    if totals["foreign"][1]:
        w("!! %d foreign mapping(s) inside the range: the library never uses those pages\n"
          % totals["foreign"][1])


# ---------------------------------------------------------------- the library's view: its page map
# Kinds of runs, in the order of the legend: name, meaning. The same words as lib/pagemap.c's dump.
KINDS = [
    ("small", "small blocks of one size class (shade: share of its blocks live; -: cut ahead for a heap)"),
    ("large", "one large block (> 128 KiB; neighbours alternate shades)"),
    ("mmap", "served to the program's own mmap() (neighbours alternate shades)"),
    ("free-dirty", "free, still resident until purged (CONTIG_PURGE_MS)"),
    ("free-clean", "free and purged, or never touched: no memory"),
    ("fixed", "taken by the program's MAP_FIXED mapping"),
    ("foreign", "foreign mapping: never used by the library"),
    ("unused", "not yet made usable (beyond the frontier)"),
]
KIND_NAMES = [k for k, _ in KINDS]
PK_UNUSED, PK_FREE, PK_SMALL, PK_LARGE, PK_MMAP, PK_CONT, PK_FOREIGN, PK_MMAP_FIXED = range(8)
ASKED_CACHED = (1 << 64) - 1      # a PK_LARGE head's asked once a thread's cache holds the block
PF_DIRTY = 0x01
PF_RESV = 0x80          # a page of a PROT_NONE reservation nothing has made accessible (not committed)
DIRTY_BIT = bytes(b & PF_DIRTY for b in range(256))    # flags.translate(): 1 where dirty, else 0
USED_MASK = 0x3fffffff
BEACON_MAGIC = b"libcontig-pgmap\0"
BEACON_VERSION = 2
BEACON_FMT = "<16s4I7Q2I16H"        # lib/beacon.h, pagemap_beacon_t
BEACON_SIZE = struct.calcsize(BEACON_FMT)
HEADER_INTS = ("pid", "size", "page_size", "reserved", "committed", "committed_peak", "resident",
               "resident_peak", "live_bytes", "live_blocks", "mmap_bytes", "purged_bytes", "collisions")


class PageMap(object):
    """The library's page map: header values and runs (addr, npages, kind, fields)."""

    def __init__(self):
        self.header = {}
        self.runs = []
        self.collisions = []        # (addr, len, route)
        self.complete = False
        self.source = ""

    def base(self):
        return self.header.get("base", 0)

    def page_size(self):
        return self.header.get("page_size", 1 << 16)

    def frontier(self):
        return self.header.get("frontier", self.base())

    def totals(self):
        """kind -> [runs, pages]."""
        t = {k: [0, 0] for k in KIND_NAMES}
        for _, n, kind, _ in self.runs:
            t.setdefault(kind, [0, 0])
            t[kind][0] += 1
            t[kind][1] += n
        return t

    def reserved_pages(self):
        """Pages of served PROT_NONE reservations nothing has made accessible (not committed)."""
        return sum(f.get("reserved", 0) for _, _, kind, f in self.runs if kind == "mmap")

    def by_class(self):
        """block size -> dict(cls, runs, pages, live, blocks) over the small runs."""
        out = {}
        for _, n, kind, f in self.runs:
            if kind != "small" or not f.get("block"):
                continue        # (a run cut ahead for a heap, no class yet: huge chunks)
            c = out.setdefault(f.get("block", 0), dict(cls=f.get("class", 0), runs=0, pages=0, live=0, blocks=0))
            c["runs"] += 1
            c["pages"] += n
            c["live"] += f.get("live", 0)
            c["blocks"] += f.get("blocks", 0)
        return out


def parse_pagemap(text):
    """A PageMap from lib/pagemap.c's dump (CONTIG_MAP_FILE). ValueError when it is not one."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("libcontig page map "):
        raise ValueError("not a libcontig page map dump")
    if lines[0].split()[-1] != str(BEACON_VERSION):
        raise ValueError("page map version %s, this contig reads %d" % (lines[0].split()[-1], BEACON_VERSION))
    pm = PageMap()
    in_runs = False
    for line in lines[1:]:
        f = line.split()
        if not f:
            continue
        if f[0] == "end":
            pm.complete = True
            break
        if not in_runs:
            if f[0] == "runs":
                in_runs = True
            elif f[0] == "collision" and len(f) >= 4:
                pm.collisions.append((int(f[1], 16), int(f[2]), f[3]))
            elif f[0] in ("base", "frontier") and len(f) == 2:
                pm.header[f[0]] = int(f[1], 16)
            elif f[0] in HEADER_INTS and len(f) == 2:
                pm.header[f[0]] = int(f[1])
            elif len(f) == 2:
                pm.header[f[0]] = f[1]
            continue
        if len(f) < 3:
            raise ValueError("bad run line: %r" % line)
        fields = {}
        for kv in f[3:]:
            k, _, v = kv.partition("=")
            fields[k] = int(v)
        pm.runs.append((int(f[0], 16), int(f[1]), f[2], fields))
    return pm


def decode_pages(raw, beacon, class_pages, frontier, read):
    """Runs from raw descriptors, as lib/pagemap.c's dump walks them; also (dirty pages, live
    bytes) as the library counts them (committed = dirty pages; live = small blocks + large runs).
    read(addr, n) reads the process's memory: a small run's live count is in its page_hot_t,
    outside the descriptor (the owner writes it on every malloc and free)."""
    ds = beacon["desc_size"]
    shift = beacon["page_shift"]
    base = beacon["base"]
    o = beacon
    raw = bytes(raw[:frontier * ds])
    kinds = raw[o["off_kind"]::ds]             # one byte per page, sliced out at C speed
    flags = raw[o["off_flags"]::ds]
    dirty = len(flags) - flags.translate(DIRTY_BIT).count(0)
    runs, live = [], 0
    u16, u32, u64 = struct.Struct("<H").unpack_from, struct.Struct("<I").unpack_from, struct.Struct("<Q").unpack_from
    i = 0
    while i < frontier:
        kind = kinds[i]
        at = i * ds
        addr = base + (i << shift)
        if kind == PK_SMALL:
            cls = raw[at + o["off_cls"]]
            n = class_pages[cls] if 0 < cls < len(class_pages) and class_pages[cls] else 1
            n = min(n, frontier - i)
            bs = u32(raw, at + o["off_block_size"])[0]
            try:
                used = u32(read(u64(raw, at + o["off_hot"])[0] + o["hot_used"], 4))[0] & USED_MASK
            except OSError:             # its metadata given back since the descriptors were read
                used = 0
            live += used * bs
            runs.append((addr, n, "small", {"class": cls, "block": bs, "live": used,
                                            "capacity": u16(raw, at + o["off_capacity"])[0],
                                            "blocks": (n << shift) // bs if bs else 0}))
        elif kind in (PK_LARGE, PK_MMAP, PK_FREE):
            n = min(u32(raw, at + o["off_npages"])[0] or 1, frontier - i)
            # a large block a thread's cache holds is freed memory: drawn as free pages are
            cached = kind == PK_LARGE and u64(raw, at + o["off_asked"])[0] == ASKED_CACHED
            if kind == PK_FREE or cached:
                a = i
                while a < i + n:
                    d = flags[a] & PF_DIRTY
                    e = a + 1
                    while e < i + n and flags[e] & PF_DIRTY == d:
                        e += 1
                    runs.append((base + (a << shift), e - a, "free-dirty" if d else "free-clean", {}))
                    a = e
            else:
                x, y = u64(raw, at + o["off_asked"])[0], u64(raw, at + o["off_usable"])[0]
                if kind == PK_LARGE:
                    live += n << shift
                    runs.append((addr, n, "large", dict(asked=x, usable=y)))
                else:
                    f = {"from": x, "to": y}
                    resv = sum(1 for a in range(i, i + n) if flags[a] & PF_RESV)
                    if resv:
                        f["reserved"] = resv
                    runs.append((addr, n, "mmap", f))
        else:
            n = 1
            while i + n < frontier and kinds[i + n] == kind:
                n += 1
            name = {PK_FOREIGN: "foreign", PK_MMAP_FIXED: "fixed", PK_UNUSED: "unused"}.get(kind, "stray")
            runs.append((addr, n, name, {}))
        i += n
    return runs, dirty, live


class Beacon(object):
    """The library in a running process, found and read through /proc/PID/maps and /proc/PID/mem."""

    def __init__(self, pid, maps=None):
        self.pid = pid
        self.mem = open("/proc/%d/mem" % pid, "rb", buffering=0)
        self.fields = None
        if maps is None:
            maps = parse_maps(slurp("/proc/%d/maps" % pid))
        for lo, hi, perms, inode, name in maps:
            # the beacon's own page: anonymous, read-only, never merged with read-write metadata
            if perms != "r--p" or inode != "0" or name:
                continue
            try:
                head = self.read(lo, BEACON_SIZE)
            except OSError:
                continue
            if head[:16] == BEACON_MAGIC:
                self.fields = self.decode(head)
                break
        if self.fields is None:
            self.mem.close()
            raise LookupError("no libcontig page map beacon in /proc/%d/maps" % pid)
        b = self.fields
        self.class_pages = list(self.read(b["class_pages"], b["nclass"]))
        self.class_size = list(struct.unpack("<%dI" % b["nclass"], self.read(b["class_size"], 4 * b["nclass"])))

    @staticmethod
    def decode(head):
        v = struct.unpack(BEACON_FMT, head[:BEACON_SIZE])
        names = ("magic version header_size desc_size page_shift base size pages npages frontier class_size "
                 "class_pages nclass pid off_kind off_shift off_cls off_flags off_capacity off_hot "
                 "off_block_size off_npages off_head_off off_asked off_usable hot_used").split()
        b = dict(zip(names, v))
        if b["version"] != BEACON_VERSION:
            raise LookupError("page map beacon version %d, this contig reads %d" % (b["version"], BEACON_VERSION))
        return b

    def read(self, addr, n):
        self.mem.seek(addr)
        data = self.mem.read(n)
        if len(data) != n:
            raise OSError("short read of /proc/%d/mem at %#x" % (self.pid, addr))
        return data

    def snapshot(self):
        """(PageMap, committed bytes, live bytes) now."""
        b = self.fields
        frontier = struct.unpack("<Q", self.read(b["frontier"], 8))[0]
        frontier = min(frontier, b["npages"])
        raw = self.read(b["pages"], frontier * b["desc_size"]) if frontier else b""
        runs, dirty, live = decode_pages(raw, b, self.class_pages, frontier, self.read)
        pm = PageMap()
        pm.source = "the beacon in /proc/%d/mem" % self.pid
        pm.header = dict(pid=self.pid, base=b["base"], size=b["size"], page_size=1 << b["page_shift"],
                         frontier=b["base"] + (frontier << b["page_shift"]),
                         committed=dirty << b["page_shift"], live_bytes=live)
        pm.runs = runs
        pm.header["mmap_bytes"] = sum(r[1] for r in runs if r[2] == "mmap") << b["page_shift"]
        if frontier < b["npages"]:
            pm.runs.append((b["base"] + (frontier << b["page_shift"]), b["npages"] - frontier, "unused", {}))
        pm.complete = True
        return pm, dirty << b["page_shift"], live

    def close(self):
        self.mem.close()


def statm_rss(pid):
    try:
        return int(slurp("/proc/%d/statm" % pid).split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def print_pagemap(pm, out, all_runs=False):
    w = out.write
    h = pm.header
    ps = pm.page_size()
    base, front = pm.base(), pm.frontier()
    w("the library's view: its page map (%s)\n" % pm.source)
    w("  pages of %s; made usable %#x-%#x (%s, the frontier); range %s\n"
      % (human(ps), base, front, human(front - base), human(h.get("size", 0))))
    parts = []
    for key, label in (("committed", "committed"), ("resident", "resident"), ("live_bytes", "live"),
                       ("mmap_bytes", "served mmaps"), ("purged_bytes", "purged")):
        if key in h:
            parts.append("%s %s" % (label, human(h[key])))
    if "live_blocks" in h:
        parts.append("%d live blocks" % h["live_blocks"])
    if parts:
        w("  " + ", ".join(parts) + (" (resident: whole process)" if "resident" in h else "") + "\n")
    if not pm.complete:
        w("  !! the dump was cut short: the runs below are not all of them\n")
    w("\n  %-11s %6s %8s %10s  %s\n" % ("kind", "runs", "pages", "bytes", "meaning"))
    t = pm.totals()
    for k, meaning in KINDS:
        runs, pages = t.get(k, [0, 0])
        if k == "unused" and not runs:
            continue
        w("  %-11s %6d %8d %10s  %s\n" % (k, runs, pages, human(pages * ps), meaning))
        resv = pm.reserved_pages() if k == "mmap" else 0
        if resv:
            w("  %-11s %6s %8d %10s  of them PROT_NONE reservations' pages not yet made accessible: not "
              "committed (reserved=)\n" % ("", "", resv, human(resv * ps)))
    if t.get("stray", [0])[0]:
        w("  %-11s %6d %8d  (descriptors being changed while read)\n" % ("stray", t["stray"][0], t["stray"][1]))
    cl = pm.by_class()
    if cl:
        w("\n  small runs by size class\n")
        w("  %5s %8s %5s %6s %9s %9s %5s %10s\n" % ("class", "block", "runs", "pages", "live", "blocks", "fill",
                                                   "live bytes"))
        for bs in sorted(cl):
            c = cl[bs]
            fill = 100.0 * c["live"] / c["blocks"] if c["blocks"] else 0.0
            w("  %5d %8d %5d %6d %9d %9d %4.0f%% %10s\n" % (c["cls"], bs, c["runs"], c["pages"], c["live"],
                                                          c["blocks"], fill, human(c["live"] * bs)))
    for addr, ln, route in pm.collisions:
        w("  !! collision %#x-%#x (%s) found %s\n" % (addr, addr + ln, human(ln), route))
    shown = [r for r in pm.runs if r[2] != "unused"]
    limit = len(shown) if all_runs else 40
    w("\n  runs in address order%s\n" % ("" if len(shown) <= limit else " (first %d of %d; --all for every one)"
                                         % (limit, len(shown))))
    for addr, n, kind, f in shown[:limit]:
        extra = " ".join("%s=%d" % kv for kv in f.items())
        w("  %#014x %5d %-10s %s\n" % (addr, n, kind, extra))


def print_timeline(samples, out):
    w = out.write
    if not samples:
        return
    w("\ntimeline: %d samples over %.2f s (committed and live from the page map, resident from "
      "/proc/PID/statm)\n" % (len(samples), samples[-1][0]))
    w("  %8s %12s %12s %12s\n" % ("t (s)", "committed", "resident", "live"))
    step = max(1, len(samples) // 20)
    picked = samples[::step]
    if picked[-1] is not samples[-1]:
        picked.append(samples[-1])
    for t, c, r, lv in picked:
        w("  %8.3f %12s %12s %12s\n" % (t, "-" if c is None else human(c), "-" if r is None else human(r),
                                         "-" if lv is None else human(lv)))


# ---------------------------------------------------------------- the picture
COLOURS = {
    "small": "#2166ac", "large": "#e08214", "mmap": "#8e44ad", "free-dirty": "#f6d04d",
    "free-clean": "#d9d9d9", "fixed": "#8c510a", "foreign": "#d7191c", "unused": "#ffffff", "stray": "#000000",
}
KCOLOURS = {"usable": "#4daf4a", "reserved": "#bdbdbd", "served": "#8e44ad", "foreign": "#d7191c",
            "unmapped": "#ffffff"}



def draw(path, title, pm, segs, base, end, samples, exit_at=None, subtitle=None):
    """Draw the map into path: the whole range as the kernel maps it, the library's pages up to its
    frontier, small runs by size class, and (with samples) the timeline."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LinearSegmentedColormap
    from matplotlib.patches import Patch, Rectangle

    have_tl = len(samples) >= 2
    fig = plt.figure(figsize=(15, 13.5 if have_tl else 11), dpi=100)
    heights = [0.9, 5.2, 2.2] + ([2.2] if have_tl else [])
    gs = fig.add_gridspec(len(heights), 2, height_ratios=heights, width_ratios=[4.2, 1.5],
                          hspace=0.55, wspace=0.05, left=0.11, right=0.985, top=0.92, bottom=0.05)
    title = " ".join(title.split())          # a command with newlines in it stays on one line
    if len(title) > 110:
        title = title[:107] + "..."
    fig.suptitle(title, fontsize=13, fontweight="bold")
    if subtitle:
        fig.text(0.5, 0.958, subtitle if len(subtitle) <= 190 else subtitle[:187] + "...", ha="center",
                 va="top", fontsize=10, style="italic")
    ps = pm.page_size() if pm else GRANULE
    front = pm.frontier() if pm else base

    # (1) the whole range, linear, as /proc/PID/maps shows it
    ax = fig.add_subplot(gs[0, :])
    for lo, hi, cls, _, _ in segs:
        ax.add_patch(Rectangle((lo, 0), max(hi - lo, (end - base) / 400.0 if cls == "foreign" else hi - lo), 1,
                               facecolor=KCOLOURS[cls], edgecolor="none"))
    ax.add_patch(Rectangle((base, 0), end - base, 1, fill=False, edgecolor="black", linewidth=0.8))
    if pm and front > base:
        # the heap in use, drawn at least 0.4% wide so that it shows in a 64 GiB range
        ax.add_patch(Rectangle((base, 0.15), max(front - base, (end - base) / 250.0), 0.7,
                               facecolor=COLOURS["small"], edgecolor="black", linewidth=0.5))
    ax.set_xlim(base, end)
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    ticks = [base + (end - base) * k // 8 for k in range(9)]
    ax.set_xticks(ticks)
    ax.set_xticklabels(["%#x\n+%s" % (t, human(t - base).replace(".0 ", " ")) for t in ticks], fontsize=7.5)
    ax.set_title("1. the whole range %#x-%#x (%s), linear, as the kernel maps it (/proc/PID/maps)"
                 % (base, end, human(end - base)), fontsize=10, loc="left")
    ax.set_xlabel("address (and offset from the base)", fontsize=8)
    if pm:
        ax.annotate("heap in use: %s, %#x-%#x (blue; page by page in 2)" % (human(front - base), base, front),
                    xy=(base + (end - base) / 250.0, 0.5), xytext=(base + (end - base) * 0.04, 0.5), fontsize=9,
                    va="center", bbox=dict(boxstyle="round", facecolor="white", alpha=0.9),
                    arrowprops=dict(arrowstyle="->", color="black"), annotation_clip=False)
    for lo, hi, cls, _, note in segs:
        if cls == "foreign":
            ax.annotate("foreign %#x-%#x %s" % (lo, hi, (note or "mapping")[:40]), xy=(lo, 0.2),
                        xytext=(lo + (end - base) * 0.04, 0.2), fontsize=8, color=KCOLOURS["foreign"],
                        va="center", bbox=dict(boxstyle="round", facecolor="white", alpha=0.9),
                        arrowprops=dict(arrowstyle="->", color=KCOLOURS["foreign"]), annotation_clip=False)
    present = sorted({s[2] for s in segs}, key=[k for k, _ in KCLASSES].index)
    ax.legend(handles=[Patch(facecolor=KCOLOURS[k], edgecolor="black", label=dict(
        usable="usable (rw-p)", reserved="reserved, PROT_NONE (---p)", served="other protections",
        foreign="foreign", unmapped="unmapped")[k]) for k in present],
        loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=len(present), fontsize=8, frameon=False,
        borderaxespad=0.1)

    # (2) the library's pages, [base, frontier), one cell per page, rows of cols pages
    ax = fig.add_subplot(gs[1, 0])
    lax = fig.add_subplot(gs[1, 1])
    lax.axis("off")
    fillmap = LinearSegmentedColormap.from_list("fill", ["#d1e5f0", "#053061"])
    if pm and front > base:
        npages = (front - base) // ps
        per = 1                                   # pages per cell: a big heap is drawn coarser
        while npages / per > 64 * 96:
            per *= 2
        ncell = npages / per
        cols = 64 if ncell > 32 * 32 else 32 if ncell > 32 else max(8, int(ncell))
        cells = (npages + per - 1) // per
        rows = (cells + cols - 1) // cols
        cellb = per * ps
        # neighbouring large blocks and mappings in alternate shades, so that each one shows
        alt = {"large": ["#e08214", "#b35806"], "mmap": ["#8e44ad", "#5b2c6f"]}
        nth = {"large": 0, "mmap": 0}
        for addr, n, kind, f in pm.runs:
            if kind == "unused":
                continue
            first = (addr - base) // cellb
            last = (addr + n * ps - 1 - base) // cellb
            colour = COLOURS.get(kind, "#000000")
            if kind in alt:
                colour = alt[kind][nth[kind] % 2]
                nth[kind] += 1
            if kind == "small":
                colour = fillmap(min(1.0, f.get("live", 0) / float(f.get("blocks") or 1)))
            for c in range(first, min(last, cells - 1) + 1):
                r, col = divmod(c, cols)
                ax.add_patch(Rectangle((col, r), 1, 1, facecolor=colour, edgecolor="white", linewidth=0.3))
            # outline the run and label small runs with their block size when the cells are big enough
            if per == 1 and rows <= 48:
                r, col = divmod(first, cols)
                if kind == "small":
                    ax.text(col + 0.5, r + 0.5, short_size(f["block"]) if f.get("block") else "-",
                            ha="center", va="center",
                            fontsize=5.5 if cols >= 48 else 7,
                            color="white" if f.get("live", 0) / float(f.get("blocks") or 1) > 0.45 else "black")
                elif kind in ("large", "mmap") and n >= 3:
                    label = "%s %s" % ("large" if kind == "large" else "mmap", human(
                        f.get("asked", n * ps) if kind == "large" else f.get("to", 0) - f.get("from", 0)))
                    if f.get("reserved"):       # a reservation's pages not made accessible: no memory
                        label += ", %s reserved" % human(f["reserved"] * ps)
                    ax.text(col + 0.15, r + 0.5, label, ha="left", va="center", fontsize=6, color="white")
        ax.set_xlim(0, cols)
        ax.set_ylim(max(rows, 8), 0)             # a small heap keeps square-ish cells
        if rows < 8:
            ax.text(cols / 2.0, (rows + 8) / 2.0, "(the heap in use ends at %#x)" % front, ha="center",
                    va="center", fontsize=9, color="#555555")
        ax.set_aspect("auto")
        step = max(1, rows // 24)
        ax.set_yticks([r + 0.5 for r in range(0, rows, step)])
        ax.set_yticklabels(["%#x" % (base + r * cols * cellb) for r in range(0, rows, step)], fontsize=7,
                           family="monospace")
        xt = list(range(0, cols + 1, 8 if cols >= 32 else 2))
        ax.set_xticks(xt)
        ax.set_xticklabels([human(x * cellb).replace(".0 ", " ") for x in xt], fontsize=7)
        ax.set_xlabel("offset within the row (each row %s; one cell = %s page%s)"
                      % (human(cols * cellb), human(cellb), "" if per == 1 else "s, coloured by the kind "
                         "covering most of it"), fontsize=8)
        ax.set_ylabel("address of the row's first byte", fontsize=8)
        ax.set_title("2. the library's page map, %#x-%#x (%s made usable, %d pages of %s); source: %s"
                     % (base, front, human(front - base), npages, human(ps), pm.source), fontsize=10, loc="left")
        if cells < rows * cols:
            for c in range(cells, rows * cols):
                r, col = divmod(c, cols)
                ax.add_patch(Rectangle((col, r), 1, 1, facecolor="white", edgecolor="none", hatch="////",
                                       alpha=0.3))
        for addr, ln, route in pm.collisions:
            c = (max(addr, base) - base) // cellb
            if c < cells:
                r, col = divmod(c, cols)
                ax.text(min(col + max(1, ln // cellb), cols - 1) + 0.3, r + 0.5, "<- collision: foreign %#x, %s, "
                        "found %s" % (addr, human(ln), route), color=COLOURS["foreign"], fontsize=8, va="center",
                        ha="left" if col < cols * 0.6 else "right", clip_on=True,
                        bbox=dict(boxstyle="round", facecolor="white", edgecolor=COLOURS["foreign"], alpha=0.9))
    else:
        ax.axis("off")
        ax.text(0.5, 0.5, "no page map: the library's beacon or dump was not found\n(only the kernel's view "
                "above)" if not pm else "no pages made usable yet", ha="center", va="center", transform=ax.transAxes)
    t = pm.totals() if pm else {}
    handles = []
    for k, meaning in KINDS:
        if k == "unused":
            continue
        runs, pages = t.get(k, [0, 0])
        colour = fillmap(0.75) if k == "small" else COLOURS[k]
        handles.append(Patch(facecolor=colour, edgecolor="black", linewidth=0.5,
                             label="%s: %s\n%d run%s, %s" % (k, "\n".join(textwrap.wrap(meaning, 34)), runs,
                                                          "" if runs == 1 else "s", human(pages * ps))))
    lax.legend(handles=handles, loc="upper left", fontsize=7.5, title="kinds of page runs", title_fontsize=9,
               frameon=True, labelspacing=0.7, borderaxespad=0, bbox_to_anchor=(0.03, 1.0))
    h = pm.header if pm else {}
    lines = []
    for key, label in (("committed", "committed"), ("resident", "resident (whole process)"),
                       ("live_bytes", "live blocks"), ("mmap_bytes", "served mmaps"),
                       ("purged_bytes", "purged so far")):
        if key in h:
            lines.append("%-25s %s" % (label, human(h[key])))
        if key == "mmap_bytes" and key in h and pm.reserved_pages():
            lines.append("%-25s %s" % ("  reserved, not committed", human(pm.reserved_pages() * ps)))
    if "collisions" in h:
        lines.append("%-25s %d" % ("collisions", h["collisions"]))
    if lines:
        lax.text(0.03, -0.02, "\n".join(lines), family="monospace", fontsize=8, va="top",
                 transform=lax.transAxes)
    # a small colour scale for the fill of small runs, under the legend
    cax = lax.inset_axes([0.06, 0.07, 0.8, 0.03])
    import numpy
    cax.imshow(numpy.linspace(0, 1, 100).reshape(1, -1), aspect="auto", cmap=fillmap, extent=(0, 100, 0, 1))
    cax.set_yticks([])
    cax.set_xticks([0, 50, 100])
    cax.set_xticklabels(["0%", "50%", "100%"], fontsize=7)
    cax.set_title("small run fill: live blocks / blocks", fontsize=7.5)
    if not pm:
        cax.set_visible(False)

    # (3) small runs by size class: live bytes against the room their runs have
    ax = fig.add_subplot(gs[2, :])
    cl = pm.by_class() if pm else {}
    if cl:
        sizes = sorted(cl)
        x = list(range(len(sizes)))
        room = [cl[s]["blocks"] * s / 1024.0 for s in sizes]
        live = [cl[s]["live"] * s / 1024.0 for s in sizes]
        ax.bar(x, room, color="#d1e5f0", edgecolor="#2166ac", linewidth=0.6, label="room in the runs (blocks x size)")
        ax.bar(x, live, color="#053061", label="live blocks")
        for xi, s in zip(x, sizes):
            ax.text(xi, room[xi], "%d" % cl[s]["runs"], ha="center", va="bottom", fontsize=6.5)
        ax.set_xticks(x)
        ax.set_xticklabels([short_size(s) for s in sizes], fontsize=7, rotation=0 if len(sizes) < 30 else 60)
        ax.set_xlabel("block size of the class (bytes; K = KiB); the number over a bar is its runs", fontsize=8)
        ax.set_ylabel("KiB", fontsize=8)
        ax.set_yscale("log")
        ax.legend(fontsize=8, loc="upper left")
    else:
        ax.text(0.5, 0.5, "no small runs", ha="center", va="center", transform=ax.transAxes)
    ax.set_title("3. small blocks by size class: live bytes and the room in their runs (log scale)",
                 fontsize=10, loc="left")
    ax.tick_params(labelsize=7)

    # (4) the timeline
    if have_tl:
        ax = fig.add_subplot(gs[3, :])
        ts = [s[0] for s in samples]
        for idx, label, colour in ((1, "committed (pages the library holds: live or dirty)", "#e08214"),
                                   (2, "resident (whole process, /proc/PID/statm)", "#4daf4a"),
                                   (3, "live (malloc blocks in use; served mmaps are not in it)", "#2166ac")):
            ys = [None if s[idx] is None else s[idx] / float(MiB) for s in samples]
            pts = [(t, y) for t, y in zip(ts, ys) if y is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, color=colour, linewidth=1.5)
        if exit_at is not None:
            ax.axvline(exit_at, color="#555555", linestyle="--", linewidth=0.8)
            ax.text(exit_at, ax.get_ylim()[1] * 0.95, " exit: the library's own counts ", ha="right",
                    va="top", fontsize=7.5, color="#555555")
        ax.set_xlabel("seconds since the first sample", fontsize=8)
        ax.set_ylabel("MiB", fontsize=8)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title("4. memory over the run: %d samples, one every %.0f ms or so"
                     % (len(samples), 1000.0 * ts[-1] / max(1, len(ts) - 1)), fontsize=10, loc="left")
        ax.tick_params(labelsize=7)
    fig.savefig(path)
    plt.close(fig)


# ---------------------------------------------------------------- map
def lib_loaded(maps, lib, preload=""):
    """Whether the process maps the library: by lib's name, one with libcontig in its name, or
    one its LD_PRELOAD names (a copy under another name)."""
    names = {os.path.basename(lib), os.path.basename(os.path.realpath(lib))}
    names.update(os.path.basename(p) for p in re.split(r"[ :]+", preload) if p)
    return any(m[4] and (os.path.basename(m[4]) in names or "libcontig" in m[4]) for m in maps)


def read_environ(pid):
    try:
        raw = slurp("/proc/%d/environ" % pid, "rb").split(b"\0")
    except OSError:
        return None
    env = {}
    for item in raw:
        k, sep, v = item.decode(errors="replace").partition("=")
        if sep:
            env[k] = v
    return env


class Sampler(object):
    """Samples a process: committed and live from the beacon, resident from statm."""

    def __init__(self, pid, lib, preload=""):
        self.pid, self.lib, self.preload = pid, lib, preload
        self.t0 = time.monotonic()
        self.samples = []           # (seconds, committed, resident, live)
        self.beacon = None
        self.last_maps = None
        self.last_pm = None
        self.nmaps = 0

    def sample(self):
        try:
            maps = parse_maps(slurp("/proc/%d/maps" % self.pid))
        except OSError:
            return False
        if not maps or not lib_loaded(maps, self.lib, self.preload):
            return bool(maps)
        self.last_maps = maps
        self.nmaps += 1
        committed = live = None
        for _ in range(2):
            if self.beacon is None:
                try:
                    self.beacon = Beacon(self.pid, maps)
                except (LookupError, OSError):
                    self.beacon = None
                    break
            try:
                self.last_pm, committed, live = self.beacon.snapshot()
                break
            except (OSError, struct.error):
                # the process called execve (a shell script or a wrapper such as a pyenv shim
                # that execs the real program): /proc/PID/mem, opened before, still names the
                # old image's memory, which is gone. The new image has a beacon of its own.
                self.beacon.close()
                self.beacon = None
        rss = statm_rss(self.pid)
        if self.last_pm is not None and rss is not None and committed is not None:
            self.last_pm.header["resident"] = rss
        self.samples.append((time.monotonic() - self.t0, committed, rss, live))
        return True

    def close(self):
        if self.beacon is not None:
            self.beacon.close()


def show(args, title, pm, maps, base, end, colls, notes, samples, exit_at=None, subtitle=None):
    if maps is not None:
        segs = segments(maps, base, end, colls)
    elif pm is not None:
        # no sample of the maps (the command was too quick): the range as the library left it
        resv = base + pm.header.get("reserved", 0)
        front = pm.frontier()
        segs = [(base, front, "usable", "", "")]
        if resv > front:
            segs.append((front, resv, "reserved", "", ""))
        if end > max(front, resv):
            segs.append((max(front, resv), end, "unmapped", "", ""))
    else:
        segs = [(base, end, "unmapped", "", "")]
    out = sys.stdout
    if args.text or not args.output:
        out.write(title + "\n")
        if subtitle:
            out.write("(%s)\n" % subtitle)
        for n in notes:
            out.write(n + "\n")
        out.write("\n")
        if maps is not None:
            print_kernel_view(maps, base, end, segs, out)
        if pm is not None:
            out.write("\n")
            print_pagemap(pm, out, args.all_runs)
        print_timeline(samples, out)
    if args.output:
        try:
            draw(args.output, title, pm, segs, base, end, samples, exit_at, subtitle)
        except ImportError:
            raise Failure("drawing needs matplotlib (Debian: apt-get install python3-matplotlib); "
                          "--text prints the same map", 1)
        except OSError as e:
            raise Failure("cannot write the picture %s: %s" % (args.output, e.strerror or e), 1)
        out.write("%s map: picture in %s\n" % (ME, args.output))
    return 0


def map_pid(args, lib):
    pid = int(args.operands[0])
    try:
        maps = parse_maps(slurp("/proc/%d/maps" % pid))
    except OSError as e:
        sys.stderr.write("%s map: cannot read /proc/%d/maps: %s\n" % (ME, pid, e.strerror))
        return 1
    tenv = read_environ(pid)
    preload = tenv.get("LD_PRELOAD", "") if tenv is not None else ""   # its own, never this shell's
    notes = []
    if tenv is None:
        notes.append("(its environment is unreadable: the range is taken from this shell's CONTIG_*)")
        tenv = dict(os.environ)
    tenv.update(args.env)
    cfg, _ = effective_config(tenv)
    base, end = cfg["base"], cfg["base"] + cfg["size"]
    try:
        comm = slurp("/proc/%d/comm" % pid).strip()
    except OSError:
        comm = "?"
    if not lib_loaded(maps, lib, preload):
        notes.append("libcontig is not loaded in this process: the range is shown anyway")
    s = Sampler(pid, lib, preload)
    deadline = time.monotonic() + args.watch
    while s.sample() and time.monotonic() < deadline:
        time.sleep(args.interval)
    s.close()
    pm = s.last_pm
    if pm is not None and "CONTIG_BASE" not in args.env:
        base, end = pm.base(), pm.base() + pm.header["size"]
    elif pm is None and lib_loaded(maps, lib, preload):
        notes.append("(no page map: the library's beacon could not be read from /proc/%d/mem; "
                     "run as root or as its parent)" % pid)
    title = "pid %d (%s): the heap range of a running process" % (pid, comm)
    return show(args, title, pm, s.last_maps or maps, base, end, [], notes, s.samples if args.watch else [])


def map_run(args, lib):
    cmd = args.operands
    env = preload_env(lib, child_env(args))
    tmp = tempfile.TemporaryDirectory(prefix="contig-map.")
    env["CONTIG_MAP_FILE"] = os.path.join(tmp.name, "map.%p")     # the command's children write their own
    try:
        p = subprocess.Popen(cmd, env=env)
    except OSError as e:
        sys.stderr.write("%s map: %s: %s\n" % (ME, cmd[0], e.strerror))
        tmp.cleanup()
        return 127 if isinstance(e, FileNotFoundError) else 126
    dump = os.path.join(tmp.name, "map.%d" % p.pid)
    s = Sampler(p.pid, lib)
    try:
        while p.poll() is None:
            t = time.monotonic()
            s.sample()
            # a big heap costs more to read: never spend more than a fifth of the time sampling
            time.sleep(max(args.interval, 4 * (time.monotonic() - t)))
    except KeyboardInterrupt:
        p.wait()
    s.close()
    rc = p.returncode
    pm = None
    others = []     # (committed peak, pid) of the processes the command forked, from their own dumps
    try:
        pm = parse_pagemap(slurp(dump))
        pm.source = "CONTIG_MAP_FILE, written at exit"
    except (OSError, ValueError):
        pm = None
    try:
        for name in os.listdir(tmp.name):
            m = re.match(r"map\.(\d+)$", name)
            if not m or int(m.group(1)) == p.pid:
                continue
            try:
                h = parse_pagemap(slurp(os.path.join(tmp.name, name))).header
            except (OSError, ValueError):
                continue
            others.append((h.get("committed_peak", 0), int(m.group(1))))
    finally:
        tmp.cleanup()
    how = "exited with status %d" % rc if rc >= 0 else "was killed by signal %d" % -rc
    if pm is None and s.last_maps is None:
        sys.stderr.write("%s map: %s %s before it could be sampled, and left no page map\n" % (ME, cmd[0], how))
        return 1
    cfg, _ = effective_config(child_env(args))
    base, end = cfg["base"], cfg["base"] + cfg["size"]
    notes = []
    colls = []
    exit_at = None
    if pm is not None:
        h = pm.header
        base, end = pm.base(), pm.base() + h["size"]
        colls = [(a, a + n, r) for a, n, r in pm.collisions]
        notes.append("library: mode %s, reserved %s, committed peak %s, %d live block(s) at exit, %d collision(s)"
                     % (h.get("mode", "?"), human(h.get("reserved", 0)), human(h.get("committed_peak", 0)),
                        h.get("live_blocks", 0), h.get("collisions", 0)))
        if s.samples:
            exit_at = time.monotonic() - s.t0
            s.samples.append((exit_at, h.get("committed"), None, h.get("live_bytes")))
    elif s.last_pm is not None:
        # it ended without running its exit handlers (_exit, as a shell does, or a signal): the
        # last page map sampled through the beacon is the latest there is
        pm = s.last_pm
        notes.append("(no page map dump: the command did not run its exit handlers; the library's view is "
                     "the last sample's)")
    else:
        notes.append("(no page map dump: the command did not run its exit handlers)")
    if s.last_maps is not None:
        notes.append("kernel's view: the last of %d samples of /proc/PID/maps" % s.nmaps)
    title = "%s: %s %s" % (ME, " ".join(cmd)[:90], how)
    subtitle = None
    if others:
        # a shell script, make, a launcher: this map is of the command's own process, and the
        # heap that matters may be a child's, which has a range and a page map of its own
        peak, cpid = max(others)
        subtitle = ("it forked %d process(es) under the library; this map is of pid %d, the command itself; "
                    "the largest child heap, pid %d's, peaked at %s committed: map that program directly"
                    % (len(others), p.pid, cpid, human(peak)))
    return show(args, title, pm, s.last_maps, base, end, colls, notes, s.samples, exit_at, subtitle)


def main(argv):
    try:
        args = parse_args(argv)
        if args.what == "help":
            sys.stdout.write(USAGE % INSTALLED_LIB)
            return 0
        if args.what == "version":
            print("%s %s" % (ME, version()))
            return 0
        if args.what == "run":
            return run(args)
        lib, how = find_lib()
        if args.what == "info":
            for k, v in args.env.items():
                os.environ[k] = v
            return info(lib, how)
        if args.dashdash:
            return map_run(args, lib)
        return map_pid(args, lib)
    except UsageError as e:
        sys.stderr.write("%s: %s\nTry '%s --help' for more information.\n" % (ME, e, ME))
        return 2
    except Failure as e:
        sys.stderr.write("%s: %s\n" % (ME, e))
        return e.status
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
