#!/usr/bin/env python3
"""Merges what scripts/device/s2_matrix.sh left in WORK into one JSON and prints a summary.

Usage: s2_matrix_merge.py WORK OUT_JSON COMMIT BUDGET GPU_FACTS
Reads WORK/steps.jsonl, WORK/skipped, WORK/raw/{inv_*.json|log, check_*.json, metrics_*.txt,
spec_*.json, generate_*}; never fails on a missing or partial file (a step may have been cut).
"""
import json
import os
import re
import sys


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception:
        return None


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except Exception:
        return ""


def gtest_result(raw, tag):
    """Per-test status from the gtest JSON, or from the log when the run was cut short."""
    out = {"tests": {}}
    j = load_json(os.path.join(raw, f"inv_{tag}.json"))
    log = read_text(os.path.join(raw, f"inv_{tag}.log"))
    if not j and not log:
        return None
    if j:
        for suite in j.get("testsuites", []):
            for t in suite.get("testsuite", []):
                name = f"{suite['name']}.{t['name']}"
                status = "SKIPPED" if t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN" else (
                    "FAILED" if t.get("failures") else "OK")
                entry = {"status": status, "time": t.get("time")}
                if t.get("failures"):
                    entry["failures"] = [f.get("failure", "")[:600] for f in t["failures"]][:5]
                out["tests"][name] = entry
        out["source"] = "gtest json"
    else:
        for m in re.finditer(r"^\[ +(OK|FAILED|SKIPPED) +\] (\S+)(?: \((\d+) ms\))?", log, re.M):
            if m.group(2).count(".") and not m.group(2).endswith(","):
                out["tests"].setdefault(m.group(2), {"status": m.group(1), "time": m.group(3)})
        started = re.findall(r"^\[ RUN +\] (\S+)", log, re.M)
        for name in started:
            out["tests"].setdefault(name, {"status": "CUT (no result: the run was stopped)"})
        out["source"] = "log (no gtest json: the run was cut short or crashed)"
    out["engine_lines"] = [l for l in log.splitlines() if l.startswith("[engine invariance]")]
    statuses = [t["status"] for t in out["tests"].values()]
    out["passed"] = sum(s == "OK" for s in statuses)
    out["failed"] = sum(s == "FAILED" for s in statuses)
    out["skipped"] = sum(s == "SKIPPED" for s in statuses)
    out["cut"] = sum(s.startswith("CUT") for s in statuses)
    return out


def check_summary(j):
    rows = [{k: r.get(k) for k in ("comparison", "total", "outputs_differ", "logprobs_only_differ", "verdict")}
            for r in j.get("rows", [])]
    server = j.get("server", {})
    return {
        "exit_code": j.get("exit_code"),
        "reproducible": j.get("reproducible"),
        "users": j.get("users"),
        "features": j.get("features"),
        "cache_evidence": j.get("cache_evidence"),
        "sampling": j.get("sampling"),
        "system_fingerprints": server.get("system_fingerprints"),
        "rows": rows,
        "warnings": j.get("warnings"),
    }


def same_output(a, b):
    return a.get("token_ids") == b.get("token_ids") and a.get("logprobs") == b.get("logprobs")


def cross(a, b, run_a, run_b):
    ra, rb = a.get("runs", {}).get(run_a), b.get("runs", {}).get(run_b)
    if not ra or not rb or len(ra) != len(rb):
        return None
    differ = [i for i, (x, y) in enumerate(zip(ra, rb)) if not same_output(x, y)]
    tokens = sum(len(x.get("token_ids") or []) for x in ra)
    return {"outputs": len(ra), "tokens": tokens, "differ": len(differ), "differing_prompts": differ[:20]}


def metric(text, name):
    m = re.search(r"^" + re.escape(name) + r"(?:\{[^}]*\})? ([0-9.e+]+)", text, re.M)
    return float(m.group(1)) if m else None


def spec_summary(j):
    return {
        "device": j.get("device"),
        "dtype": j.get("dtype"),
        "config": j.get("config"),
        "env": j.get("env"),
        "bit_identical": j.get("bit_identical"),
        "complete": j.get("complete"),
        "max_tokens": j.get("max_tokens"),
        "reps": j.get("reps"),
        "cases": [{k: c.get(k) for k in ("workload", "batch", "k", "tpot_ms_off", "tpot_ms_on", "speedup", "acceptance",
                                          "draft_tokens", "accepted_tokens", "tokens_per_step_on", "bit_identical",
                                          "tpot_ms_off_all", "tpot_ms_on_all")}
                  for c in j.get("cases", [])],
    }


def main():
    work, out_path, commit, budget, gpu = sys.argv[1:6]
    raw = os.path.join(work, "raw")
    res = {"script": "scripts/device/s2_matrix.sh", "commit": commit, "budget_s": int(budget), "gpu": gpu}
    res["steps"] = [json.loads(l) for l in read_text(os.path.join(work, "steps.jsonl")).splitlines() if l.strip()]
    res["skipped"] = [l for l in read_text(os.path.join(work, "skipped")).splitlines() if l.strip()]
    lines = []

    res["invariance_tests"] = {}
    for tag in ("06_bf16", "06_f16", "8b_bf16"):
        r = gtest_result(raw, tag)
        if r is None:
            lines.append(f"invariance {tag}: not run")
            continue
        res["invariance_tests"][tag] = r
        lines.append(f"invariance {tag}: {r['passed']} passed, {r['failed']} failed, {r['skipped']} skipped, "
                     f"{r['cut']} cut ({r['source']})")
        for name, t in r["tests"].items():
            if t["status"] not in ("OK", "SKIPPED"):
                lines.append(f"  {t['status']}: {name}")

    checks = {}
    for name in ("check_a", "check_b", "check_a_seeded"):
        j = load_json(os.path.join(raw, f"{name}.json"))
        if j:
            checks[name] = j
            res.setdefault("http_checks", {})[name] = check_summary(j)
            lines.append(f"{name}: exit {j.get('exit_code')}, " + "; ".join(
                f"{r.get('comparison')}: {r.get('outputs_differ')} differ ({r.get('logprobs_only_differ')} logprobs only)"
                for r in j.get("rows", [])))
        else:
            lines.append(f"{name}: no report")
    if "check_a" in checks and "check_b" in checks:
        a, b = checks["check_a"], checks["check_b"]
        res["http_cross_server"] = {
            "what": "server A (default KV, --gpu-memory-utilization 0.3) vs server B (48 KV blocks, 64-token steps): "
                    "same prompts, token ids and logprobs compared exactly",
            "A_fresh_vs_B_fresh": cross(a, b, "fresh", "fresh"),
            "A_fresh_vs_B_64_users": cross(a, b, "fresh", "users"),
            "A_64_users_vs_B_64_users": cross(a, b, "users", "users"),
        }
        for k, v in res["http_cross_server"].items():
            if isinstance(v, dict):
                lines.append(f"cross-server {k}: {v['differ']} of {v['outputs']} outputs differ ({v['tokens']} tokens)")
    for s in ("a", "b"):
        t = read_text(os.path.join(raw, f"metrics_{s}.txt"))
        if t:
            res.setdefault("server_metrics", {})[s] = {
                n: metric(t, "verbatim:" + n)
                for n in ("num_preemptions_total", "prefix_cache_hits_total", "prefix_cache_queries_total",
                          "generation_tokens_total", "prompt_tokens_total")}
    if "server_metrics" in res:
        lines.append("server metrics: " + json.dumps(res["server_metrics"]))

    gen = {}
    for f in sorted(os.listdir(raw)) if os.path.isdir(raw) else []:
        m = re.match(r"generate_(contract|fast)_([0-9.]+)\.err$", f)
        if not m:
            continue
        err = read_text(os.path.join(raw, f))
        kv = re.search(r"KV capacity (\d+) blocks", err)
        fp = re.search(r"fingerprint (fp_[0-9a-f]+)", err)
        outs = [json.loads(l) for l in read_text(os.path.join(raw, f[:-4] + ".jsonl")).splitlines() if l.strip()]
        gen[f"{m.group(1)}_{m.group(2)}"] = {
            "kv_blocks": int(kv.group(1)) if kv else None, "fingerprint": fp.group(1) if fp else None,
            "token_ids": [o["choices"][0].get("token_ids") for o in outs if "choices" in o],
            "logprobs": [o["choices"][0].get("logprobs") for o in outs if "choices" in o]}
    if gen:
        res["generate_flags"] = gen
        if "contract_0.2" in gen and "contract_0.4" in gen:
            same = gen["contract_0.2"]["token_ids"] == gen["contract_0.4"]["token_ids"] and \
                gen["contract_0.2"]["logprobs"] == gen["contract_0.4"]["logprobs"]
            lines.append(f"generate --gpu-memory-utilization 0.2 / 0.4: KV blocks {gen['contract_0.2']['kv_blocks']} / "
                         f"{gen['contract_0.4']['kv_blocks']}, outputs {'identical' if same else 'DIFFER'}")
        if "fast_0.4" in gen and "contract_0.4" in gen:
            lines.append(f"generate --mode fast: fingerprint {gen['fast_0.4']['fingerprint']} vs contract "
                         f"{gen['contract_0.4']['fingerprint']}, logprobs "
                         f"{'identical' if gen['fast_0.4']['logprobs'] == gen['contract_0.4']['logprobs'] else 'differ'}")
    refused = read_text(os.path.join(raw, "generate_fast_cpu.err")).strip().splitlines()
    if refused:
        res["generate_fast_on_cpu"] = refused[-1]

    for tag in ("06", "8b", "06_eager_verify"):
        j = load_json(os.path.join(raw, f"spec_{tag}.json"))
        if not j:
            continue
        s = spec_summary(j)
        res.setdefault("spec_bench", {})[tag] = s
        if s["complete"] is False:
            lines.append(f"spec {tag}: cut short after {len(s['cases'])} case(s)")
        for c in s["cases"]:
            lines.append(f"spec {tag} K {c['k']} {c['workload']:10s} batch {c['batch']}: {c['tpot_ms_off']:.3f} -> "
                         f"{c['tpot_ms_on']:.3f} ms/token ({c['speedup']:.2f}x), acceptance "
                         f"{100 * (c['acceptance'] or 0):.1f}%, {'bit-identical' if c['bit_identical'] else 'DIFFER'}")

    res["summary"] = lines
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)
    print("\n".join(["== s2_matrix summary =="] + lines))


if __name__ == "__main__":
    main()
