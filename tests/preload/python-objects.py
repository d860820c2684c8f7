# python-objects.py - builds lists, dicts, strings, big ints, bytes and class instances, and
# prints the id() (the address, in CPython) of each fresh object, one per line, for python.sh.
import sys

objs = []
for i in range(20000):
    objs.append([i, i + 1])
    objs.append({"k%d" % i: i, i: str(i)})
    objs.append("string-%d-" % i + "x" * (i % 300))
    objs.append(10 ** 40 + i)
    if i % 50 == 0:
        objs.append(bytearray(i * 100 + 1))
        objs.append(b"b" * (i * 37 + 1000))
        objs.append(list(range(i)))
        objs.append({j: j for j in range(i % 500)})


class Thing:
    def __init__(self, n):
        self.n = n
        self.payload = [n] * (n % 64)


objs.extend(Thing(i) for i in range(5000))
big = bytearray(64 << 20)   # 64 MiB: a large block
objs.append(big)
out = sys.stdout
for o in objs:
    out.write("%d\n" % id(o))
    # Where the object holds its data in a separate block, that block too.
    if isinstance(o, list) and len(o) > 0:
        out.write("%d\n" % id(o[0]) if isinstance(o[0], Thing) else "")
    elif isinstance(o, Thing):
        out.write("%d\n" % id(o.payload))
        out.write("%d\n" % id(o.__dict__))
print("count", len(objs), file=sys.stderr)
