#!/usr/bin/env bash
# Session 32 (written without a GPU; for the next session that gets one). On an H200: the HF peer
# on the 0.6B with a check that its JSON (40ab0d7: commit, transformers version, settings, gpu,
# prefill times_ms, nvidia-smi clocks_after) parses and has those fields; then s31_a's quiet rows
# (BUDGET left, no ncu below 110 s). On any other card: only the peer check. Pack as s30_b.sh
# (PACK_XZ=1 scripts/device/pack.sh build verbatim tests/cuda_ops_test tests/cuda_model_test
# tests/cuda_invariance_test), `slim.sh hide`, run with carry [".carry"], then `slim.sh restore`.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_setup s32_a
BUDGET=${BUDGET:-420}
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
hf_peer 06 $W/m06 12 150
python3 - $OUT/hf_06.json <<'PY' 2>&1 | tee -a $LOG
import json, sys
d = json.load(open(sys.argv[1]))
want = ["commit", "transformers", "gpu"]
missing = [k for k in want if k not in d]
print("hf_peer json: top-level keys", sorted(d), "missing", missing)
print("hf_peer json: prefill", {k: d.get("prefill", {}).get(k) for k in ("times_ms", "clocks_after")})
PY
call_finish
# s31_a sets up its own call: give it the original $OUT and what is left of the budget.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  OUT=$FINAL BUDGET=$(( BUDGET - SECONDS )) exec bash scripts/device/s31_a.sh
fi
