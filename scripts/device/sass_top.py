#!/usr/bin/env python3
"""Summarizes `ncu -i REP --page source --csv --print-source sass`: per kernel, the warp-stall
samples by reason and the SASS instructions with the most samples (with their top reasons).
Usage: sass_top.py sass.csv [instructions per kernel, default 25]"""
import csv
import sys


def main():
    rows = list(csv.reader(open(sys.argv[1], errors="replace")))
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    kern, hdr, data = None, None, {}
    for r in rows:
        if r and r[0] == "Kernel Name":
            kern = r[1][:100]
            data.setdefault(kern, [])
        elif r and r[0] == "Address":
            hdr = r
        elif kern and hdr and len(r) == len(hdr):
            data[kern].append(r)
    for k, ins in data.items():
        si = hdr.index("Warp Stall Sampling (All Samples)")
        cols = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
        agg = {}
        for x in ins:
            for i in cols:
                agg[hdr[i][6:]] = agg.get(hdr[i][6:], 0) + int(x[i] or 0)
        print("==", k, "| instructions", len(ins), "| samples", sum(int(x[si] or 0) for x in ins))
        print("   by reason:", ", ".join("%s %d" % kv for kv in sorted(agg.items(), key=lambda t: -t[1])[:8]))
        for idx, x in sorted(enumerate(ins), key=lambda t: -int(t[1][si] or 0))[:top]:
            why = sorted(((int(x[i] or 0), hdr[i][6:]) for i in cols), reverse=True)[:2]
            print("  #%5d %6d  %-64s %s" % (idx, int(x[si] or 0), x[1].strip()[:64], why))


if __name__ == "__main__":
    main()
