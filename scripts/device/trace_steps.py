#!/usr/bin/env python3
"""Per-kernel times of decode steps from kernel_trace.cpp's CSV.

Usage: trace_steps.py TRACE.csv OUT.txt [STEPS]
A step starts at each gather_kernel (the embedding). Over the last STEPS whole steps (default 8):
the step's wall time (first start to last end), and per kernel (name and grid size) the launches
a step, the median summed duration, and the median summed start-to-next-start (its share of the
step's timeline: under PDL a kernel starts before the one before ends, so durations overlap and do
not add up to the step; the shares do).
"""
import csv, statistics, subprocess, sys
from collections import defaultdict

path, out = sys.argv[1], sys.argv[2]
nsteps = int(sys.argv[3]) if len(sys.argv) > 3 else 8
rows = [(int(r["start_ns"]), int(r["end_ns"]), r["name"], int(r["grid"])) for r in csv.DictReader(open(path))]
rows.sort()
names = sorted({n for _, _, n, _ in rows})
try:
    dem = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    assert len(dem) == len(names)
except Exception:
    dem = names
def short(d):
    d = d.replace("void ", "").replace("(anonymous namespace)", "anon")
    d = d.split("(")[0]
    depth, s = 0, ""
    for ch in d:  # drop template arguments
        if ch == "<": depth += 1
        elif ch == ">": depth -= 1
        elif depth == 0: s += ch
    return s.split("::")[-1]
short_of = {n: short(d) for n, d in zip(names, dem)}
starts = [i for i, r in enumerate(rows) if short_of[r[2]] == "gather_kernel"]
if len(starts) < 2:
    sys.exit("fewer than two steps found")
steps = [(starts[i], starts[i + 1]) for i in range(len(starts) - 1)][-nsteps:]
med = statistics.median
walls, dur, share, count = [], defaultdict(list), defaultdict(list), defaultdict(list)
for a, b in steps:
    ks = rows[a:b]
    walls.append(max(e for _, e, _, _ in ks) - ks[0][0])
    pd, ps, pc = defaultdict(int), defaultdict(int), defaultdict(int)
    for i, (s, e, n, g) in enumerate(ks):
        key = f"{short_of[n]} [{g}]"
        nxt = ks[i + 1][0] if i + 1 < len(ks) else e
        pd[key] += e - s
        ps[key] += nxt - s
        pc[key] += 1
    gap = rows[b][0] - max(e for _, e, _, _ in ks)
    pd["(gap to the next step)"] += gap; ps["(gap to the next step)"] += gap; pc["(gap to the next step)"] += 1
    for k in pd:
        dur[k].append(pd[k]); share[k].append(ps[k]); count[k].append(pc[k])
with open(out, "w") as f:
    f.write(f"steps {len(steps)}, kernels a step {med([b - a for a, b in steps])}, step wall median {med(walls)/1e3:.1f} us\n")
    f.write(f"{'kernel [grid]':52s} {'n/step':>6s} {'dur us':>8s} {'share us':>9s} {'dur each':>9s} {'share each':>10s}\n")
    for k in sorted(share, key=lambda k: -med(share[k])):
        n = max(med(count[k]), 1)
        f.write(f"{k[:52]:52s} {n:6.0f} {med(dur[k])/1e3:8.1f} {med(share[k])/1e3:9.1f} {med(dur[k])/1e3/n:9.2f} {med(share[k])/1e3/n:10.2f}\n")
print(open(out).read())
