#!/usr/bin/env python3
"""Summarizes a ring-kernel timeline (docs/patches/s25-ring-trace.patch, CudaRingTrace.Timeline).

Usage: ring_trace_summary.py TRACE.csv [--mhz 1980] [--consumers CW] [--json OUT]
Per CTA, clock64 cycles of lane 0 of each role (one SM's clock: comparable within a CTA) and
%globaltimer ns at its entry and end: the SM clock's rate (cycles / ns, median over CTAs; it
replaces --mhz in the microsecond columns) and the kernel's span (first entry to last end). Prints the
median and 90th percentile over CTAs and tiles of each step, in cycles and microseconds, and where
each role waited: a consumer waiting on `full` is waiting for copies; a producer waiting on `empty`
is waiting for a consumer; the folder waiting on `state_full` is waiting for a consumer.
"""
import argparse
import collections
import csv
import json
import statistics

TILES = 48
WARP_SLOT = 8 + 10 * TILES
P_TOP, P_IDS, P_FREE, P_ISSUED, C_FULL, C_DONE, C_SLOT, C_STORED, F_WAIT, F_DONE = range(10)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--mhz", type=float, default=1980.0)
    ap.add_argument("--consumers", type=int, default=0, help="consumer warps (0: from the warp slots)")
    ap.add_argument("--json")
    args = ap.parse_args()
    ctas = collections.defaultdict(dict)
    with open(args.trace) as f:
        for row in csv.DictReader(f):
            ctas[int(row["cta"])][int(row["slot"])] = int(row["value"])
    steps = collections.defaultdict(list)
    rates, entries, ends = [], [], []
    sm_ctas = collections.defaultdict(list)
    roles_smsp = collections.Counter()
    for cta, v in ctas.items():
        if 0 not in v or 3 not in v:
            continue
        warps = sorted(k - WARP_SLOT for k in v if k >= WARP_SLOT)
        cw = args.consumers or (len(warps) - 3)
        if warps:
            sm_ctas[v[WARP_SLOT + warps[0]] >> 8].append(cta)
            for w in warps:
                role = "consumer" if w < cw else ("folder" if w == cw else "producer")
                roles_smsp[(role, (v[WARP_SLOT + w] & 0xFF) % 4)] += 1
        t0 = v[0]
        if 4 in v and 5 in v and v[5] > v[4]:
            rates.append((v[3] - t0) / (v[5] - v[4]) * 1000.0)
            entries.append(v[4])
            ends.append(v[5])
        steps["cta total"].append(v[3] - t0)
        steps["barrier init"].append(v[1] - t0)
        if 2 in v:
            steps["q loaded (from entry)"].append(v[2] - t0)
        ntiles = max((k - 8) // 10 + 1 for k in v if 8 <= k < WARP_SLOT)
        first_copy = v.get(8 + P_ISSUED)
        if first_copy:
            steps["first tile's copies issued (from entry)"].append(first_copy - t0)
        for t in range(ntiles):
            b = 8 + 10 * t
            g = lambda i: v.get(b + i)
            def add(name, a, c):
                if a is not None and c is not None:
                    steps[name].append(c - a)
            add("producer: block ids wait", g(P_TOP), g(P_IDS))
            add("producer: stage-free wait", g(P_IDS), g(P_FREE))
            add("producer: issue copies", g(P_FREE), g(P_ISSUED))
            add("copies issued -> consumer has the tile", g(P_ISSUED), g(C_FULL))
            add("consumer: compute tile", g(C_FULL), g(C_DONE))
            add("consumer: state-slot wait", g(C_DONE), g(C_SLOT))
            add("consumer: store state", g(C_SLOT), g(C_STORED))
            add("state stored -> folder has it", g(C_STORED), g(F_WAIT))
            add("folder: fold", g(F_WAIT), g(F_DONE))
            if t > 0:
                add("folder: wait for next state", v.get(b - 10 + F_DONE), g(F_WAIT))
                add("producer: loop (tile to tile)", v.get(b - 10 + P_TOP), g(P_TOP))
            if cw and t >= cw:
                add("consumer: idle before tile (after its last store)", v.get(b - 10 * cw + C_STORED), g(C_FULL))
        if ntiles:
            steps["tiles per CTA"].append(ntiles)
            last = 8 + 10 * (ntiles - 1)
            if last + F_DONE in v:
                steps["last fold -> outputs stored"].append(v[3] - v[last + F_DONE])
    mhz = statistics.median(rates) if rates else args.mhz
    us = 1.0 / mhz
    out = {"sm_mhz_measured": mhz if rates else None, "sm_mhz_max": args.mhz}
    print(f"{len(ctas)} CTAs traced; SM clock {mhz:.0f} MHz ({'measured: cycles / globaltimer' if rates else 'assumed'};"
          f" max {args.mhz:.0f})")
    if entries:
        span = (max(ends) - min(entries)) / 1000.0
        out["kernel_span_us"] = span
        print(f"kernel span (first CTA entry to last CTA end, globaltimer): {span:.2f} us")
    print(f"{'step':52s} {'median cyc':>10s} {'p90 cyc':>9s} {'median us':>9s} {'n':>6s}")
    for name, xs in steps.items():
        if name == "tiles per CTA":
            print(f"{name:52s} {statistics.median(xs):10.0f}")
            continue
        m, p = statistics.median(xs), pct(xs, 0.9)
        out[name] = {"median_cycles": m, "p90_cycles": p, "median_us": m * us, "n": len(xs)}
        print(f"{name:52s} {m:10.0f} {p:9.0f} {m * us:9.3f} {len(xs):6d}")
    per_sm = collections.Counter(len(c) for c in sm_ctas.values())
    print("CTAs per SM (traced):", dict(per_sm))
    print("role x SMSP (warpid % 4) counts:", {f"{r}@{s}": n for (r, s), n in sorted(roles_smsp.items())})
    out["ctas_per_sm"] = dict(per_sm)
    out["role_smsp"] = {f"{r}@{s}": n for (r, s), n in sorted(roles_smsp.items())}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
