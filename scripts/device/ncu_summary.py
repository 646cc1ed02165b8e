#!/usr/bin/env python3
"""Sums an `ncu --csv --metrics gpu__time_duration.sum` log per (kernel, grid, block): total us,
launches, us per launch, largest first. Usage: ncu_summary.py log.csv [out.txt [seq.txt]]; seq.txt
gets every launch in order (index, us, kernel, grid), to tell apart same-shaped launches."""
import collections, csv, sys


def main():
    rows = [r for r in csv.reader(open(sys.argv[1], errors="replace")) if len(r) > 10]
    if not rows:
        print("no ncu rows")
        return
    hdr, rows = rows[0], rows[1:]
    ki, vi, gi, bi = (hdr.index(c) for c in ("Kernel Name", "Metric Value", "Grid Size", "Block Size"))
    tot = collections.defaultdict(lambda: [0, 0.0])
    seq = []
    for r in rows:
        try:
            ns = float(r[vi].replace(",", ""))
        except ValueError:
            continue
        name = r[ki].split("(")[0].replace("void ", "").replace("unnamed>::", "")[:60]
        key = (name, r[gi].replace(" ", ""), r[bi].replace(" ", ""))
        tot[key][0] += 1
        tot[key][1] += ns
        seq.append("%5d %9.2f  %s %s" % (len(seq), ns / 1e3, key[0], key[1]))
    lines = ["%10.1f us %5d x %8.1f us  %s %s/%s" % (t / 1e3, c, t / c / 1e3, k[0], k[1], k[2])
             for k, (c, t) in sorted(tot.items(), key=lambda x: -x[1][1])]
    text = "total %.1f us over %d launches\n" % (sum(t for _, t in tot.values()) / 1e3,
                                                sum(c for c, _ in tot.values())) + "\n".join(lines) + "\n"
    if len(sys.argv) > 2:
        open(sys.argv[2], "w").write(text)
    if len(sys.argv) > 3:
        open(sys.argv[3], "w").write("\n".join(seq) + "\n")
    print("\n".join(text.splitlines()[:25]))


if __name__ == "__main__":
    main()
