#!/bin/sh
# bench_combine.sh - scripts/bench --combine pools earlier runs without running anything: the
# median of the rounds' paired ratios over every run, the runs' own range, in how many runs a
# ratio was at most 1.0, the geometric means; it refuses runs whose ratios are for different
# bases, and a path with no results in it (exit status 2).
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/tools/common.sh"

BENCH="$TOP_SRCDIR/scripts/bench"
[ -f "$BENCH" ] || fail "$BENCH not found"

# run DIR BASE W1_CONTIG_TIMES W1_MIMALLOC_TIMES [W2]: a results.json as scripts/bench writes it,
# with the fields --combine reads (round k of each peer is a pair).
mkrun() {
	mkdir -p "$1"
	"$PY" - "$@" <<'EOF'
import json, statistics, sys
d, base, ct, mt = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
extra = len(sys.argv) > 5
def wl(c, m):
    c = [float(x) for x in c.split(",")]
    m = [float(x) for x in m.split(",")]
    runs = {base: [{"time": t, "rss_kib": 1000} for t in c], "mimalloc": [{"time": t, "rss_kib": 2000} for t in m]}
    med = {p: {"time": statistics.median([r["time"] for r in rs]), "rss_kib": 1000 if p == base else 2000}
           for p, rs in runs.items()}
    return {"kind": "synthetic", "median": med, "runs": runs,
            "ratios": {"mimalloc": {"time": med[base]["time"] / med["mimalloc"]["time"], "rss": 0.5}}}
w = {"w1": wl(ct, mt)}
if extra:
    w["w2"] = wl("1,1,1", "4,4,4")
json.dump({"command": "test", "date": "today", "reps": 3, "base": base,
           "peers": {base: {"version": "v-" + d[-1]}}, "workloads": w}, open(d + "/results.json", "w"))
EOF
}

mkrun "$TMPD/a" contig 1,1,1 2,2,2 extra       # w1: 0.5 in every round
mkrun "$TMPD/b" contig 3,3,3 1,1,1             # w1: 3.0 in every round
# pooled, w1 is the median of the six rounds' ratios, 1.75 (the ratio of the pooled medians,
# 2/1.5, would be 1.33)
if expect_status 0 "combine two runs" "$PY" "$BENCH" --combine "$TMPD/a" "$TMPD/b/results.json" --out "$TMPD/pooled"; then
	[ -s "$TMPD/pooled/combined.md" ] || bad "no combined.md"
	"$PY" - "$TMPD/pooled/combined.json" >"$TMPD/check" 2>&1 <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
w1, w2, g = c["rows"]["w1"]["mimalloc"], c["rows"]["w2"]["mimalloc"], c["geomean"]["mimalloc"]
want = [(c["rows"]["w1"]["runs"], 2), (w1["time"], 1.75), (w1["time_min"], 0.5), (w1["time_max"], 3.0),
        (w1["time_at_most_1"], 1), (w1["ratios"], 2), (w1["pairs"], 6), (w1["rss"], 0.5),
        (c["rows"]["w2"]["runs"], 1), (w2["time"], 0.25), (g["workloads"], 2), (g["common_workloads"], 1),
        (round(g["time"], 6), round((1.75 * 0.25) ** 0.5, 6)), (round(g["common_time"], 6), 1.75),
        (g["at_most_1"], 1), ([round(r["time"], 6) for r in g["runs"]], [0.5, 3.0]), (len(c["inputs"]), 2)]
bad = [(i, got, exp) for i, (got, exp) in enumerate(want) if got != exp]
print("mismatches (index, got, want): %s" % bad if bad else "all as expected")
sys.exit(1 if bad else 0)
EOF
	if [ $? -eq 0 ]; then ok "pooled figures: $(cat "$TMPD/check")"; else bad "pooled figures: $(cat "$TMPD/check")"; fi
	grep -q '0.50-3.00' "$TMPD/out" && grep -q '1/2' "$TMPD/out" ||
		bad "the table shows no range 0.50-3.00 and 1/2: $(cat "$TMPD/out")"
fi

mkrun "$TMPD/c" glibc 1,1,1 2,2,2
if expect_status 2 "runs with different bases" "$PY" "$BENCH" --combine "$TMPD/a" "$TMPD/c" --out "$TMPD/pooled2"; then
	grep -q 'cannot pool' "$TMPD/err" && ok "different bases refused: $(head -1 "$TMPD/err")" ||
		bad "different bases: no reason given: $(cat "$TMPD/err")"
fi
if expect_status 2 "a directory with no results" "$PY" "$BENCH" --combine "$TMPD/a" "$TMPD/none" --out "$TMPD/pooled3"; then
	ok "missing results refused: $(head -1 "$TMPD/err")"
fi
finish
