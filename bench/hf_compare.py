#!/usr/bin/env python3
"""HF transformers on a checkpoint folder vs our logits (from `verbatim dump-logits`).

Loads the folder with Qwen3ForCausalLM (the acceptance check that HF reads make-model output),
computes fp32 and bf16 logits of the same prompts, and reports the error of ours against fp32 next to
HF bf16's own error against fp32 (the yardstick), per-position argmax agreement, and greedy agreement.
"""
import argparse, json, time

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--ours", required=True, help="dump-logits output (bf16 run)")
    ap.add_argument("--greedy", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--skip-fp32", action="store_true", help="compare with HF bf16 only (memory)")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    prompts = json.load(open(a.prompts))
    ours = load_file(a.ours)
    res = {"model": a.model, "prompts": len(prompts), "per_prompt": []}
    t0 = time.time()
    models = {}
    for name, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        if name == "fp32" and a.skip_fp32:
            continue
        models[name] = AutoModelForCausalLM.from_pretrained(a.model, dtype=dt, attn_implementation="eager").cuda().eval()
    res["hf_load_s"] = time.time() - t0
    res["hf_loaded"] = True
    ref_name = "fp32" if "fp32" in models else "bf16"
    agg = {"ours_vs_ref_max_abs": 0.0, "hf_bf16_vs_ref_max_abs": 0.0, "ours_argmax_agree": 0, "hf_bf16_argmax_agree": 0,
           "positions": 0, "ours_greedy_prefix": 0, "hf_bf16_greedy_prefix": 0, "greedy_total": 0}
    num = {"ours": 0.0, "bf16": 0.0}
    den = 0.0
    with torch.no_grad():
        for i, ids in enumerate(prompts):
            x = torch.tensor([ids], device="cuda")
            ref = models[ref_name](x).logits[0].float()
            hb = models["bf16"](x).logits[0].float()
            ob = ours[f"p{i}.logits"].cuda().float()
            d_o = (ob - ref).abs().max().item()
            d_h = (hb - ref).abs().max().item()
            num["ours"] += ((ob - ref) ** 2).sum().item()
            num["bf16"] += ((hb - ref) ** 2).sum().item()
            den += (ref ** 2).sum().item()
            am_ref = ref.argmax(-1)
            agg["ours_vs_ref_max_abs"] = max(agg["ours_vs_ref_max_abs"], d_o)
            agg["hf_bf16_vs_ref_max_abs"] = max(agg["hf_bf16_vs_ref_max_abs"], d_h)
            agg["ours_argmax_agree"] += int((ob.argmax(-1) == am_ref).sum().item())
            agg["hf_bf16_argmax_agree"] += int((hb.argmax(-1) == am_ref).sum().item())
            agg["positions"] += len(ids)
            entry = {"len": len(ids), "ours_max_abs": d_o, "hf_bf16_max_abs": d_h}
            if a.greedy and f"p{i}.greedy" in ours:
                def gen(m):
                    out = m.generate(x, max_new_tokens=a.greedy, do_sample=False, min_new_tokens=a.greedy,
                                     pad_token_id=0, eos_token_id=None)
                    return out[0, len(ids):].tolist()
                g_ref = gen(models[ref_name])
                g_bf = gen(models["bf16"]) if ref_name != "bf16" else g_ref
                g_ours = ours[f"p{i}.greedy"].tolist()
                def prefix(u, v):
                    n = 0
                    while n < min(len(u), len(v)) and u[n] == v[n]:
                        n += 1
                    return n
                entry["greedy_ref"] = g_ref
                entry["greedy_ours"] = g_ours
                agg["ours_greedy_prefix"] += prefix(g_ours, g_ref)
                agg["hf_bf16_greedy_prefix"] += prefix(g_bf, g_ref)
                agg["greedy_total"] += len(g_ref)
            res["per_prompt"].append(entry)
    agg["ours_rel_err"] = (num["ours"] / den) ** 0.5
    agg["hf_bf16_rel_err"] = (num["bf16"] / den) ** 0.5
    agg["reference"] = "hf_" + ref_name
    res.update(agg)
    json.dump(res, open(a.out, "w"), indent=1)
    print(json.dumps({k: v for k, v in res.items() if k != "per_prompt"}))


if __name__ == "__main__":
    main()
