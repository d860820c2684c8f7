#!/usr/bin/python3
"""test_contig.py - unit tests of the contig launcher (scripts/contig.py) with unittest: the
command line, the page map dump parser and the descriptor decoder, the text output, and the
picture; then the library's page map of a helper program with known blocks (tools/t-pagemap),
from its exit dump and, while it runs, through its beacon.

From make check (tools/test_contig.sh): LIBCONTIG, TESTS_SRCDIR and TESTS_BUILDDIR are set.
By hand: python3 tests/tools/test_contig.py -v (the library tests are skipped without LIBCONTIG).
"""

import importlib.util
import io
import os
import struct
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "contig.py")
spec = importlib.util.spec_from_file_location("contig", SCRIPT)
contig = importlib.util.module_from_spec(spec)
spec.loader.exec_module(contig)

LIB = os.environ.get("LIBCONTIG", "")
HELPER = os.path.join(os.environ.get("TESTS_BUILDDIR", os.path.join(HERE, "..")), "tools", "t-pagemap")

DUMP = """libcontig page map 2
pid 42
base 0xf800000000
size 68719476736
page_size 65536
mode auto
reserved 68719476736
frontier 0xf800400000
committed 524288
committed_peak 655360
resident 3000000
resident_peak 3100000
live_bytes 400000
live_blocks 12
mmap_bytes 1048576
purged_bytes 65536
collisions 1
collision 0xf800300000 65536 maps
runs
0xf800000000 1 small class=26 block=3072 live=7 capacity=10 blocks=21
0xf800010000 5 large asked=300000 usable=327680
0xf800060000 2 free-dirty
0xf800080000 16 mmap from=0 to=1048576
0xf800180000 1 small class=26 block=3072 live=21 capacity=21 blocks=21
0xf800190000 23 free-clean
0xf800300000 1 foreign
0xf800310000 15 free-clean
0xf800400000 1048512 unused
end
"""


def have_matplotlib():
    return importlib.util.find_spec("matplotlib") is not None


class CommandLine(unittest.TestCase):
    def test_run_options_set_variables(self):
        a = contig.parse_args(["--size", "4G", "--mode=lazy", "--stats=json", "--verbose", "--", "ls", "-l"])
        self.assertEqual(a.what, "run")
        self.assertEqual(a.operands, ["ls", "-l"])
        self.assertEqual(a.env, dict(CONTIG_SIZE="4G", CONTIG_MODE="lazy", CONTIG_STATS="json", CONTIG_VERBOSE="1"))

    def test_first_operand_ends_options(self):
        a = contig.parse_args(["--leaks", "python3", "--size", "1G"])
        self.assertEqual(a.operands, ["python3", "--size", "1G"])
        self.assertEqual(a.env, dict(CONTIG_LEAKS="report"))

    def test_leaks_suppress_implies_report(self):
        a = contig.parse_args(["--leaks-suppress", "s.supp", "true"])
        self.assertEqual(a.env, dict(CONTIG_LEAKS_SUPPRESS="s.supp"))
        env = contig.child_env(a, base={})
        self.assertEqual(env["CONTIG_LEAKS_SUPPRESS"], "s.supp")
        self.assertEqual(env["CONTIG_LEAKS"], "report")
        self.assertEqual(contig.child_env(a, base=dict(CONTIG_LEAKS="error"))["CONTIG_LEAKS"], "error")
        a = contig.parse_args(["--leaks=error", "--leaks-suppress=s.supp", "true"])
        self.assertEqual(contig.child_env(a, base={})["CONTIG_LEAKS"], "error")

    def test_bad_command_lines(self):
        for argv in ([], ["--stats"], ["--stats", "--"], ["--frobnicate", "true"], ["--mode", "x", "true"],
                     ["--size", "12Q", "true"], ["--base", "0xZZ", "true"], ["--verbose=2", "true"], ["--size"],
                     ["--png", "x.png", "true"], ["-o", "x.png", "true"], ["info", "extra"], ["map"],
                     ["map", "notapid"], ["map", "--"], ["map", "--watch", "-1", "1"],
                     ["map", "--interval", "0", "1"], ["--leaks-suppress"], ["--leaks-suppress="]):
            with self.assertRaises(contig.UsageError, msg=repr(argv)):
                contig.parse_args(argv)

    def test_map_options(self):
        a = contig.parse_args(["map", "-o", "h.png", "--text", "--watch", "1.5", "--interval=50", "123"])
        self.assertEqual((a.what, a.output, a.text, a.watch, a.interval, a.operands),
                         ("map", "h.png", True, 1.5, 0.05, ["123"]))
        a = contig.parse_args(["map", "--png=h.png", "--size", "1G", "--", "python3", "x.py"])
        self.assertTrue(a.dashdash)
        self.assertEqual((a.output, a.operands, a.env), ("h.png", ["python3", "x.py"], dict(CONTIG_SIZE="1G")))

    def test_help_and_version(self):
        self.assertEqual(contig.parse_args(["map", "--help"]).what, "help")
        self.assertEqual(contig.parse_args(["-V"]).what, "version")
        self.assertEqual(contig.main(["--frobnicate"]), 2)


class DumpParser(unittest.TestCase):
    def test_header_runs_totals(self):
        pm = contig.parse_pagemap(DUMP)
        self.assertTrue(pm.complete)
        self.assertEqual(pm.base(), 0xf800000000)
        self.assertEqual(pm.frontier(), 0xf800400000)
        self.assertEqual(pm.header["committed"], 524288)
        self.assertEqual(pm.header["mode"], "auto")
        self.assertEqual(pm.collisions, [(0xf800300000, 65536, "maps")])
        self.assertEqual(len(pm.runs), 9)
        self.assertEqual(pm.runs[1], (0xf800010000, 5, "large", dict(asked=300000, usable=327680)))
        t = pm.totals()
        self.assertEqual(t["small"], [2, 2])
        self.assertEqual(t["free-clean"], [2, 38])
        self.assertEqual(t["foreign"], [1, 1])
        c = pm.by_class()
        self.assertEqual(list(c), [3072])
        self.assertEqual(c[3072]["live"], 28)
        self.assertEqual(c[3072]["blocks"], 42)

    def test_cut_short_and_wrong(self):
        pm = contig.parse_pagemap(DUMP.replace("end\n", ""))
        self.assertFalse(pm.complete)
        with self.assertRaises(ValueError):
            contig.parse_pagemap("hello\n")
        with self.assertRaises(ValueError):
            contig.parse_pagemap(DUMP.replace("page map 2", "page map 99"))


class Decoder(unittest.TestCase):
    """decode_pages walks raw descriptors as lib/pagemap.c walks G.pages."""
    OFF = dict(desc_size=64, page_shift=16, base=0x100000000, off_kind=56, off_shift=57, off_cls=58,
               off_flags=59, off_capacity=62, off_hot=0, off_block_size=32, off_npages=0, off_head_off=4,
               off_asked=8, off_usable=16, hot_used=8)
    HOT = 0x7000000000           # where the fake process keeps its small runs' page_hot_t

    def setUp(self):
        self.mem = {}            # address -> bytes: the fake process's memory outside the descriptors

    def read(self, addr, n):
        if addr not in self.mem:
            raise OSError("nothing at %#x" % addr)
        return self.mem[addr][:n]

    def desc(self, kind, flags=1, cls=0, used=0, bs=0, cap=0, npages=0, asked=0, usable=0):
        d = bytearray(64)
        o = self.OFF
        d[o["off_kind"]], d[o["off_cls"]], d[o["off_flags"]] = kind, cls, flags
        struct.pack_into("<H", d, o["off_capacity"], cap)
        if kind == contig.PK_SMALL:
            hot = self.HOT + 64 * len(self.mem)
            self.mem[hot + o["hot_used"]] = struct.pack("<I", used)
            struct.pack_into("<Q", d, o["off_hot"], hot)
            struct.pack_into("<I", d, o["off_block_size"], bs)
        else:
            struct.pack_into("<IIQQ", d, 0, npages, 0, asked, usable)
        return bytes(d)

    def test_walk(self):
        cp = [0] * 49
        cp[26] = 1
        cp[40] = 2
        raw = b"".join([
            self.desc(contig.PK_SMALL, cls=26, used=5 | 0xc0000000, bs=3072, cap=9),
            self.desc(contig.PK_SMALL, cls=40, used=1, bs=32768, cap=2), self.desc(contig.PK_CONT),
            self.desc(contig.PK_LARGE, npages=3, asked=150000, usable=196608), self.desc(contig.PK_CONT),
            self.desc(contig.PK_CONT),
            self.desc(contig.PK_FREE, npages=3), self.desc(contig.PK_FREE, flags=0), self.desc(contig.PK_FREE, flags=0),
            self.desc(contig.PK_FOREIGN, flags=0), self.desc(contig.PK_FOREIGN, flags=0),
            self.desc(contig.PK_MMAP, npages=1, asked=0, usable=65536)])
        runs, dirty, live = contig.decode_pages(raw, self.OFF, cp, 12, self.read)
        kinds = [(r[2], r[1]) for r in runs]
        self.assertEqual(kinds, [("small", 1), ("small", 2), ("large", 3), ("free-dirty", 1), ("free-clean", 2),
                                 ("foreign", 2), ("mmap", 1)])
        self.assertEqual(runs[0][3]["live"], 5)            # the off-list bit is not a count
        self.assertEqual(runs[0][3]["blocks"], 21)
        self.assertEqual(runs[2][3], dict(asked=150000, usable=196608))
        self.assertEqual(runs[2][0], 0x100000000 + 3 * 65536)
        self.assertEqual(dirty, 8)
        self.assertEqual(live, 5 * 3072 + 32768 + 3 * 65536)

    def test_reserved(self):
        # a served mapping of 3 pages, two of them a PROT_NONE reservation's (PF_RESV, not dirty)
        raw = b"".join([
            self.desc(contig.PK_MMAP, flags=contig.PF_RESV, npages=3, asked=0, usable=3 * 65536),
            self.desc(contig.PK_CONT, flags=contig.PF_DIRTY), self.desc(contig.PK_CONT, flags=contig.PF_RESV),
            self.desc(contig.PK_MMAP, npages=1, asked=0, usable=65536)])
        runs, dirty, live = contig.decode_pages(raw, self.OFF, [0] * 49, 4, self.read)
        self.assertEqual(runs[0][3], {"from": 0, "to": 3 * 65536, "reserved": 2})
        self.assertEqual(runs[1][3], {"from": 0, "to": 65536})   # no field when there are none
        self.assertEqual(dirty, 2)


class TextOutput(unittest.TestCase):
    def test_pagemap_text(self):
        pm = contig.parse_pagemap(DUMP)
        pm.source = "a test"
        out = io.StringIO()
        contig.print_pagemap(pm, out)
        text = out.getvalue()
        self.assertIn("made usable 0xf800000000-0xf800400000 (4.0 MiB, the frontier)", text)
        self.assertRegex(text, r"\n  small +2 +2 +128.0 KiB")
        self.assertRegex(text, r"\n  large +1 +5 +320.0 KiB")
        self.assertRegex(text, r"\n +26 +3072 +2 +2 +28 +42 +67% +84.0 KiB")
        self.assertIn("!! collision 0xf800300000-0xf800310000 (64.0 KiB) found maps", text)
        self.assertIn("0x00f800010000     5 large      asked=300000 usable=327680", text)

    def test_kernel_text(self):
        maps = contig.parse_maps("f800000000-f800400000 rw-p 00000000 00:00 0\n"
                                 "f800400000-f800500000 r--p 00000000 fe:00 12 /usr/lib/x.so\n"
                                 "f800500000-10800000000 ---p 00000000 00:00 0\n")
        base, end = 0xf800000000, 0x10800000000
        segs = contig.segments(maps, base, end, [])
        self.assertEqual([s[2] for s in segs], ["usable", "foreign", "reserved"])
        out = io.StringIO()
        contig.print_kernel_view(maps, base, end, segs, out)
        self.assertIn("!! FOREIGN", out.getvalue())
        self.assertIn("!! 1 foreign mapping(s)", out.getvalue())

    def test_timeline_text(self):
        out = io.StringIO()
        contig.print_timeline([(0.0, 1 << 20, 2 << 20, 1000), (0.5, 2 << 20, None, 2000)], out)
        self.assertIn("2 samples over 0.50 s", out.getvalue())
        self.assertRegex(out.getvalue(), r"0.500 +2.0 MiB +- +1.9 KiB")


@unittest.skipUnless(have_matplotlib(), "python3-matplotlib is not installed")
class Picture(unittest.TestCase):
    def test_png(self):
        pm = contig.parse_pagemap(DUMP)
        pm.source = "a test"
        maps = contig.parse_maps("f800000000-f800400000 rw-p 00000000 00:00 0\n"
                                 "f800400000-10800000000 ---p 00000000 00:00 0\n")
        segs = contig.segments(maps, 0xf800000000, 0x10800000000, [])
        samples = [(i * 0.025, i << 20, (i + 2) << 20, i << 19) for i in range(20)]
        with tempfile.TemporaryDirectory() as d:
            for tl in (samples, []):
                path = os.path.join(d, "m.png")
                contig.draw(path, "a test", pm, segs, 0xf800000000, 0x10800000000, tl)
                data = contig.slurp(path, "rb")
                self.assertEqual(data[:8], b"\x89PNG\r\n\x1a\n")
                w, h = struct.unpack(">II", data[16:24])
                self.assertGreaterEqual(w, 1000)
                self.assertGreater(len(data), 40000)
            path = os.path.join(d, "none.png")
            contig.draw(path, "no page map", None, segs, 0xf800000000, 0x10800000000, [])
            self.assertEqual(contig.slurp(path, "rb")[:4], b"\x89PNG")


@unittest.skipUnless(LIB and os.path.exists(HELPER), "needs LIBCONTIG and tools/t-pagemap (make check)")
class Library(unittest.TestCase):
    """The page map of a program with known blocks: ten 2900-byte blocks (class 3072) of which
    three are freed, a 300000-byte block, a 1 MiB mmap."""

    def env(self, **kw):
        env = {k: v for k, v in os.environ.items() if not k.startswith("CONTIG_")}
        env["LD_PRELOAD"] = LIB
        env.update(kw)
        return env

    def check(self, pm, addrs):
        small = [r for r in pm.runs if r[2] == "small" and r[3]["block"] == 3072]
        self.assertEqual(len(small), 1, small)
        self.assertEqual(small[0][3]["live"], 7)
        self.assertLessEqual(small[0][0], addrs["small"])
        self.assertLess(addrs["small"], small[0][0] + small[0][1] * pm.page_size())
        large = [r for r in pm.runs if r[2] == "large" and r[0] == addrs["large"]]
        self.assertEqual(len(large), 1, pm.runs)
        self.assertEqual(large[0][1], 5)
        mm = [r for r in pm.runs if r[2] == "mmap" and r[0] == addrs["mmap"]]
        self.assertEqual(len(mm), 1, pm.runs)
        self.assertEqual(mm[0][1], 16)
        self.assertEqual(mm[0][3], {"from": 0, "to": 1 << 20})
        # runs tile [base, frontier) without gaps or overlaps
        at = pm.base()
        for addr, n, kind, _ in pm.runs:
            self.assertEqual(addr, at, "run at %#x, expected %#x" % (addr, at))
            at += n * pm.page_size()
        self.assertEqual(at, pm.base() + pm.header["size"])
        return large[0]

    def start(self, **kw):
        p = subprocess.Popen([HELPER], env=self.env(**kw), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        f = p.stdout.readline().decode().split()
        self.assertEqual(p.stdout.readline(), b"ready\n")
        return p, dict(small=int(f[1], 16), large=int(f[3], 16), mmap=int(f[5], 16), resv=int(f[7], 16))

    @staticmethod
    def stop(p):
        """Let the helper exit; its status."""
        p.stdin.close()
        status = p.wait()
        p.stdout.close()
        return status

    def snapshot(self, p):
        """The helper's page map through its beacon, then the helper stopped: (page map, committed,
        live, exit status)."""
        try:
            b = contig.Beacon(p.pid)
            pm, committed, live = b.snapshot()
            b.close()
        finally:
            status = self.stop(p)
        return pm, committed, live, status

    @staticmethod
    def committed_pages(pm, reserved=0):
        """Pages the library counts committed: its live and dirty free pages, less a reservation's."""
        t = pm.totals()
        return t["small"][1] + t["large"][1] + t["mmap"][1] - reserved + t["free-dirty"][1]

    def test_exit_dump(self):
        with tempfile.TemporaryDirectory() as d:
            dump = os.path.join(d, "map.txt")
            p, addrs = self.start(CONTIG_MAP_FILE=dump)
            self.assertEqual(self.stop(p), 0)
            pm = contig.parse_pagemap(contig.slurp(dump))
        self.assertTrue(pm.complete)
        self.assertEqual(pm.header["pid"], p.pid)
        self.assertEqual(pm.base(), 0xf800000000)
        large = self.check(pm, addrs)
        self.assertEqual(large[3], dict(asked=300000, usable=327680))
        # what the library counts committed is exactly its live pages and its dirty free pages
        self.assertEqual(pm.header["committed"], self.committed_pages(pm) * pm.page_size())
        self.assertEqual(pm.header["mmap_bytes"], pm.totals()["mmap"][1] * pm.page_size())

    def test_reservation(self):
        # CONTIG_MMAP=all serves the 1 MiB PROT_NONE reservation: 16 pages, the first two made
        # accessible, the other 14 reserved= and not committed, in the beacon's view and the dump
        with tempfile.TemporaryDirectory() as d:
            dump = os.path.join(d, "map.txt")
            p, addrs = self.start(CONTIG_MMAP="all", CONTIG_MAP_FILE=dump)
            live_pm, committed, live, status = self.snapshot(p)
            self.assertEqual(status, 0)
            pm = contig.parse_pagemap(contig.slurp(dump))
        for view in (live_pm, pm):
            self.check(view, addrs)
            rv = [r for r in view.runs if r[2] == "mmap" and r[0] == addrs["resv"]]
            self.assertEqual(len(rv), 1, view.runs)
            self.assertEqual(rv[0][1], 16)
            self.assertEqual(rv[0][3], {"from": 0, "to": 1 << 20, "reserved": 14})
        self.assertEqual(pm.header["committed"], self.committed_pages(pm, reserved=14) * pm.page_size())

    def test_dump_name_has_the_pid(self):
        with tempfile.TemporaryDirectory() as d:
            p, addrs = self.start(CONTIG_MAP_FILE=os.path.join(d, "m.%p.txt"))
            self.assertEqual(self.stop(p), 0)
            self.assertEqual(os.listdir(d), ["m.%d.txt" % p.pid])

    def test_beacon_of_running_process(self):
        p, addrs = self.start(CONTIG_BASE="0x300000000000", CONTIG_SIZE="1G")
        pm, committed, live, _ = self.snapshot(p)
        self.assertEqual(pm.base(), 0x300000000000)
        self.assertEqual(pm.header["size"], 1 << 30)
        self.check(pm, addrs)
        self.assertGreaterEqual(live, 7 * 3072 + 327680)
        self.assertGreaterEqual(committed, (1 + 5 + 16) * pm.page_size())

    def test_no_beacon_without_library(self):
        p = subprocess.Popen(["sleep", "5"])
        try:
            with self.assertRaises(LookupError):
                contig.Beacon(p.pid)
        finally:
            p.kill()
            p.wait()


if __name__ == "__main__":
    unittest.main()
