#!/usr/bin/env python3
"""The peer in the same call: HF transformers decode time per step (eager, dynamic cache) at the
batch sizes and context of `verbatim engine-bench`, and prefill time of one long prompt."""
import argparse, json, os, statistics, subprocess, time

import torch
import transformers
from transformers import AutoModelForCausalLM


def commit():
    """The verbatim commit of this script's tree (git), else $COMMIT (the device scripts set it)."""
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("COMMIT", "unknown")


def clocks_now():
    """The GPU's clocks as the driver reports them right now (nvidia-smi), or None where it cannot."""
    fields = "clocks.sm,clocks.mem,clocks.max.sm,clocks_event_reasons.active"
    try:
        idx = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0"
        line = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-i", idx],
                              capture_output=True, text=True, check=True, timeout=20).stdout.strip()
        sm, mem, sm_max, reasons = [x.strip() for x in line.split(",")]
        return {"sm_mhz": int(sm), "mem_mhz": int(mem), "sm_max_mhz": int(sm_max), "event_reasons": reasons}
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--batches", default="1,8,32,64")
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--prefill", type=int, default=2048)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    m = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.bfloat16, attn_implementation="sdpa").cuda().eval()
    V = m.config.vocab_size
    p = torch.cuda.get_device_properties(0)
    res = {"model": a.model, "impl": "hf-transformers eager forward loop, sdpa attention, DynamicCache, bf16",
           "torch": torch.__version__, "transformers": transformers.__version__, "commit": commit(),
           "settings": {"batches": a.batches, "context": a.context, "steps": a.steps, "prefill": a.prefill},
           "gpu": {"name": p.name, "sm_count": p.multi_processor_count, "memory_bytes": p.total_memory},
           "decode": []}
    g = torch.Generator(device="cuda").manual_seed(0)
    with torch.no_grad():
        for B in [int(b) for b in a.batches.split(",")]:
            ids = torch.randint(0, V, (B, a.context), device="cuda", generator=g)
            out = m(ids, use_cache=True)
            pkv = out.past_key_values
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            times = []
            for s in range(a.steps + 3):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                out = m(nxt, past_key_values=pkv, use_cache=True)
                nxt = out.logits[:, -1].argmax(-1, keepdim=True)
                pkv = out.past_key_values
                torch.cuda.synchronize()
                if s >= 3:
                    times.append((time.perf_counter() - t0) * 1e3)
            res["decode"].append({"batch": B, "median_ms": statistics.median(times), "min_ms": min(times),
                                  "clocks_after": clocks_now()})
            print(f"HF decode batch {B}: median {statistics.median(times):.2f} ms/step", flush=True)
            del pkv, out
            torch.cuda.empty_cache()
        if a.prefill:
            ids = torch.randint(0, V, (1, a.prefill), device="cuda", generator=g)
            times = []
            for r in range(4):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                out = m(ids, use_cache=True, logits_to_keep=1)
                torch.cuda.synchronize()
                if r:
                    times.append((time.perf_counter() - t0) * 1e3)
            res["prefill"] = {"tokens": a.prefill, "median_ms": statistics.median(times), "times_ms": times,
                              "clocks_after": clocks_now()}
            print(f"HF prefill {a.prefill}: median {statistics.median(times):.1f} ms", flush=True)
    json.dump(res, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
