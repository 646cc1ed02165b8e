#!/usr/bin/env bash
# Device call 5 (one call, ~220 s): the v2 contract GEMM (cp.async pipeline) against v1.
#  1. cuda_ops_test: GEMM bits for both kernels (M = 1..70 and more) and v2 == v1 bit for bit.
#  2. gemm-bench: v1, v2, cuBLAS alone on the 0.6B and 8B linear layers (weight TB/s).
#  3. 0.6B engine-bench decode: contract v1, contract v2 (VERBATIM_GEMM=v2), fast.
#  4. dump-logits with v1 and v2 on the 0.6B folder (prefill <= 64 tokens and decode: v2 runs): same bytes?
#  5. cuda_model_test with v2 (8B make-model meanwhile), 6. 8B engine-bench as time allows.
source "$(dirname "$0")/common.sh"
BUDGET=${BUDGET:-222}
left() { echo $((BUDGET - SECONDS)); }
echo "gpu: $(gpu_facts)"
s=$SECONDS
timeout 60 "$VB_BIN/cuda_ops_test" > "$OUT/cuda_ops_test.log" 2>&1
echo "cuda_ops_test rc=$? ($((SECONDS - s)) s)"; grep -E "^\[  (FAILED|PASSED) |^\[       OK \] .*Gemm|Failure|differs" "$OUT/cuda_ops_test.log" | head -16
s=$SECONDS
timeout 45 "$VB_BIN/verbatim" gemm-bench --archs qwen3-0.6b,qwen3-8b --m 1,8,32,64 --kernels v1,v2,cublas \
  --json "$OUT/gemm_bench.json" > "$OUT/gemm_bench.log" 2>&1
echo "gemm-bench rc=$? ($((SECONDS - s)) s)"; grep -E "^sum|error" "$OUT/gemm_bench.log"
make_model qwen3-0.6b /tmp/m06 > /dev/null
eb() {  # label model mode extra-env...
  local label=$1 model=$2 mode=$3; shift 3
  [ "$(left)" -lt 25 ] && { echo "skip $label: out of time"; return; }
  env "$@" timeout $(( $(left) - 10 )) "$VB_BIN/verbatim" engine-bench --model "$model" --device cuda --mode "$mode" \
    --batches 1,8,32,64 --context 1024 --steps 32 --prefill 0 --json "$OUT/eb_$label.json" 2>&1 | grep -E "decode" | sed "s/^/$label: /"
}
eb 06_v1 /tmp/m06 contract VERBATIM_GEMM=v1
eb 06_v2 /tmp/m06 contract VERBATIM_GEMM=v2
eb 06_fast /tmp/m06 fast VERBATIM_GEMM=v1
s=$SECONDS
random_prompts /tmp/p.json 151936 7 33 64 130
for k in v1 v2; do
  VERBATIM_GEMM=$k timeout 40 "$VB_BIN/verbatim" dump-logits --model /tmp/m06 --device cuda --dtype bfloat16 --prompts /tmp/p.json \
    --greedy 24 --out /tmp/logits_$k.safetensors 2>&1 | tail -1
done
cmp /tmp/logits_v1.safetensors /tmp/logits_v2.safetensors && echo "dump-logits 0.6B: v2 == v1 byte for byte ($(stat -c %s /tmp/logits_v1.safetensors) bytes)" \
  || echo "dump-logits 0.6B: v2 DIFFERS from v1"
echo "(dump-logits: $((SECONDS - s)) s)"
s=$SECONDS
( nice -n 19 bash -c "$(declare -f make_model); VB_BIN=$VB_BIN make_model qwen3-8b /tmp/m8" > /tmp/make8.log 2>&1 ) &  # niced: the test first
mk=$!
VERBATIM_GEMM=v2 timeout $(( $(left) - 45 > 20 ? $(left) - 45 : 20 )) "$VB_BIN/cuda_model_test" > "$OUT/cuda_model_test_v2.log" 2>&1
echo "cuda_model_test (VERBATIM_GEMM=v2) rc=$? ($((SECONDS - s)) s)"
grep -E "^\[  (FAILED|PASSED) |^\[       OK |Failure|differ" "$OUT/cuda_model_test_v2.log" | head -30
wait $mk; tail -2 /tmp/make8.log  # run 5: no 8B folder appeared and this log was not kept
if [ -f /tmp/m8/config.json ]; then
  eb 8b_v2 /tmp/m8 contract VERBATIM_GEMM=v2
  eb 8b_v1 /tmp/m8 contract VERBATIM_GEMM=v1
  eb 8b_fast /tmp/m8 fast VERBATIM_GEMM=v1
fi
# At most 8 files come back: the engine-bench JSONs as one.
python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
merged = {}
for f in sorted(glob.glob(os.path.join(out, "eb_*.json"))):
    merged[os.path.basename(f)[3:-5]] = json.load(open(f))
    os.remove(f)
json.dump(merged, open(os.path.join(out, "engine_bench.json"), "w"), indent=1)
PY
echo "total $SECONDS s"
