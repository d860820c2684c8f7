#!/usr/bin/python3
"""leaksum.py - the verdict of run.sh's leak pass (EXTERNAL_LEAKS=1).

    leaksum.py WORKDIR SUITE...

Reads WORKDIR/SUITE-leak/leaks/UNIT/PID-NAME.txt (fd 2 of every process of the unit from just
before libcontig's exit report: leakfd.c) and prints, per unit that reported anything, the bytes
and objects left after suppressions, the ones suppressed, and the first frames of the largest
groups; then the line "external-leaks: N units clean, M explained (suppressed), K unexplained"
(unexplained: a leak no suppression matched; explained: only suppressed ones). Writes K to
WORKDIR/leak-counts. A unit whose check was abandoned (heap too large to scan) counts as
unexplained: nothing was checked.
"""
import os
import re
import sys

GROUP = re.compile(r'^(Direct|Indirect) leak of (\d+) byte\(s\) in (\d+) object\(s\) allocated from:')
FRAME = re.compile(r'^\s+#(\d+) 0x[0-9a-f]+(?: in (\S+))?(?: \((\S+)\+0x[0-9a-f]+\))?')
SUPP = re.compile(r'^libcontig: suppressed: (\d+) byte\(s\) in (\d+) allocation')
SUMMARY = re.compile(r'^libcontig: SUMMARY: (\d+) byte\(s\) leaked in (\d+) allocation')
ABANDONED = 'leak check: abandoned'
SKIP_FRAMES = ('malloc', 'calloc', 'realloc', 'free')


def where(fn, mod):
    if fn:
        return fn
    return os.path.basename(mod) if mod else '?'


def parse(path):
    """One process's report: (leaked bytes, objects, suppressed bytes, objects, groups, abandoned)."""
    lb = ln = sb = sn = 0
    groups, cur, abandoned = [], None, False
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            m = GROUP.match(line)
            if m:
                cur = [m.group(1), int(m.group(2)), int(m.group(3)), []]
                groups.append(cur)
                continue
            m = FRAME.match(line)
            if m and cur is not None:
                if len(cur[3]) < 4:
                    cur[3].append(where(m.group(2), m.group(3)))
                continue
            cur = None if not line.strip() else cur
            m = SUPP.match(line)
            if m:
                sb, sn = sb + int(m.group(1)), sn + int(m.group(2))
            m = SUMMARY.match(line)
            if m:
                lb, ln = lb + int(m.group(1)), ln + int(m.group(2))
            if ABANDONED in line:
                abandoned = True
    return lb, ln, sb, sn, groups, abandoned


def main():
    work, suites = sys.argv[1], sys.argv[2:]
    clean = explained = unexplained = 0
    rows = []
    for suite in suites:
        top = os.path.join(work, suite + '-leak', 'leaks')
        if not os.path.isdir(top):
            continue
        for unit in sorted(os.listdir(top)):
            d = os.path.join(top, unit)
            lb = ln = sb = sn = nproc = 0
            groups, abandoned, progs = [], False, set()
            for name in sorted(os.listdir(d)):
                p = os.path.join(d, name)
                r = parse(p)
                if not (r[0] or r[2] or r[5]):
                    os.unlink(p)       # a process whose exit found nothing to say
                    continue
                nproc += 1
                progs.add(name.split('-', 1)[1].rsplit('.', 1)[0])
                lb, ln, sb, sn = lb + r[0], ln + r[1], sb + r[2], sn + r[3]
                groups += r[4]
                abandoned |= r[5]
            if ln or abandoned:
                unexplained += 1
                verdict = 'UNEXPLAINED' if ln else 'ABANDONED'
            elif sn:
                explained += 1
                verdict = 'suppressed'
            else:
                clean += 1
                continue
            groups.sort(key=lambda g: -g[1])
            stacks = []
            for g in groups:
                s = ' < '.join(fr for fr in g[3] if fr not in SKIP_FRAMES)
                if s not in stacks:
                    stacks.append(s)
                if len(stacks) == 3:
                    break
            rows.append((suite, unit, verdict, lb, ln, sb, sn, nproc, ','.join(sorted(progs)), stacks))
    if rows:
        print()
        print('Leak pass: units whose processes reported leaks at exit (logs: SUITE-leak/leaks/UNIT/):')
        print(f"{'suite':<7} {'unit':<28} {'verdict':<11} {'leaked B/objs':>15} {'suppr. B/objs':>15} procs")
        for r in rows:
            print(f'{r[0]:<7} {r[1]:<28} {r[2]:<11} {f"{r[3]}/{r[4]}":>15} {f"{r[5]}/{r[6]}":>15} '
                  f'{r[7]} ({r[8]})')
            if r[2] != 'suppressed':
                for s in r[9]:
                    print(f"{'':<10}{s[:110]}")
    print(f'external-leaks: {clean} units clean, {explained} explained (suppressed), '
          f'{unexplained} unexplained')
    with open(os.path.join(work, 'leak-counts'), 'w') as f:
        f.write(f'{unexplained}\n')


if __name__ == '__main__':
    main()
