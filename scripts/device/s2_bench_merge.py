#!/usr/bin/env python3
"""Merges the runs of s2_bench.sh (WORK/eb_<arch>_<mode>.json, WORK/hf_<arch>.json) into one JSON
with a summary per arch: decode ms/step contract vs fast vs HF, x bound, and prefill TFLOP/s.
Usage: s2_bench_merge.py out.json WORK commit budget gpu_facts"""
import glob, json, os, sys

ARCH_ORDER = ["qwen3-0.6b", "qwen3-1.7b", "qwen3-8b"]


def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main():
    out, work, commit, budget, gpu = sys.argv[1:6]
    runs = {}
    for p in sorted(glob.glob(os.path.join(work, "eb_*.json")) + glob.glob(os.path.join(work, "hf_*.json"))):
        d = load(p)
        if d is None:
            continue
        name = os.path.basename(p)[:-5]
        if name.startswith("eb_"):
            arch, mode = name[3:].split("_", 1)  # arch names have no "_"
        else:
            arch, mode = name[3:], "hf"
        runs.setdefault(arch, {})[mode] = d
    summary, lines = {}, []
    for arch in sorted(runs, key=lambda a: (ARCH_ORDER.index(a) if a in ARCH_ORDER else 99, a)):
        r = runs[arch]
        dec = {}
        for mode in ("contract", "fast", "contract_nopdl", "contract_wide64"):
            for row in (r.get(mode) or {}).get("decode", []):
                e = dec.setdefault(str(row["batch"]), {})
                e[mode + "_ms"] = round(row["median_ms"], 4)
                e["bound_ms"] = round(row["bound_ms"], 4)
                if mode == "contract":
                    e["contract_x_bound"] = round(row["ratio_to_bound"], 3)
        for row in (r.get("hf") or {}).get("decode", []):
            dec.setdefault(str(row["batch"]), {})["hf_ms"] = round(row["median_ms"], 3)
        for e in dec.values():
            if "contract_ms" in e and "fast_ms" in e:
                e["contract_over_fast"] = round(e["contract_ms"] / e["fast_ms"], 3)
            if "contract_ms" in e and "contract_nopdl_ms" in e:
                e["pdl_speedup"] = round(e["contract_nopdl_ms"] / e["contract_ms"], 3)
            if "contract_ms" in e and "hf_ms" in e:
                e["hf_over_contract"] = round(e["hf_ms"] / e["contract_ms"], 2)
        pre = {}
        for mode in ("contract", "fast"):
            p = (r.get(mode) or {}).get("prefill")
            if p:
                pre[mode + "_ms"] = round(p["ttft_median_ms"], 2)
                pre[mode + "_tflops"] = round(p["tflops"], 1)
        hp = (r.get("hf") or {}).get("prefill")
        if hp:
            pre["hf_ms"] = round(hp["median_ms"], 2)
        summary[arch] = {"decode": dec, "prefill_2048": pre}
        for b in sorted(dec, key=int):
            e = dec[b]
            lines.append("%-11s batch %2s: contract %7s ms (x%s bound), fast %7s ms, contract/fast %s, HF %s ms%s" % (
                arch, b, e.get("contract_ms", "-"), e.get("contract_x_bound", "-"), e.get("fast_ms", "-"),
                e.get("contract_over_fast", "-"), e.get("hf_ms", "-"),
                (", contract without PDL %s ms" % e["contract_nopdl_ms"] if "contract_nopdl_ms" in e else "") +
                (", contract with the wide 64-row GEMM tile %s ms" % e["contract_wide64_ms"]
                 if "contract_wide64_ms" in e else "")))
        if pre:
            lines.append("%-11s prefill 2048: contract %s ms (%s TFLOP/s), fast %s ms (%s TFLOP/s), HF %s ms" % (
                arch, pre.get("contract_ms", "-"), pre.get("contract_tflops", "-"), pre.get("fast_ms", "-"),
                pre.get("fast_tflops", "-"), pre.get("hf_ms", "-")))
    res = {"gpu": gpu, "commit": commit, "budget_s": int(budget), "summary": summary, "runs": runs}
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print("\n".join(lines) if lines else "no runs to merge")


if __name__ == "__main__":
    main()
