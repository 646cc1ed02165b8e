#!/usr/bin/env bash
# Device: the GPU tests (op and model level, invariance matrix) and a quick 0.6B timing.
source "$(dirname "$0")/common.sh"
echo "gpu: $(gpu_facts)" | tee "$OUT/gpu.txt"
s=$SECONDS
timeout 200 "$VB_BIN/cuda_ops_test" --gtest_output=json:"$OUT/cuda_ops_test.json" > "$OUT/cuda_ops_test.log" 2>&1
echo "cuda_ops_test rc=$? ($((SECONDS - s)) s)"; grep -E "^\[  (FAILED|PASSED) |Failure|Expected|Which is|differs|error" "$OUT/cuda_ops_test.log" | head -20
s=$SECONDS
timeout 300 "$VB_BIN/cuda_model_test" --gtest_output=json:"$OUT/cuda_model_test.json" > "$OUT/cuda_model_test.log" 2>&1
echo "cuda_model_test rc=$? ($((SECONDS - s)) s)"; grep -E "^\[  (FAILED|PASSED) |Failure|differ|\[cuda|error|Expected" "$OUT/cuda_model_test.log" | head -30
make_model qwen3-0.6b /tmp/m06
for mode in contract fast; do
  timeout 100 "$VB_BIN/verbatim" engine-bench --model /tmp/m06 --device cuda --mode $mode --batches 1,8,32,64 --steps 30 \
    --prefill 2048 --json "$OUT/bench_06_$mode.json" 2>&1 | tail -6
done
if [ "${WITH_8B:-0}" = 1 ]; then
  make_model qwen3-8b /tmp/m-qwen3-8b
  for mode in contract fast; do
    timeout 150 "$VB_BIN/verbatim" engine-bench --model /tmp/m-qwen3-8b --device cuda --mode $mode --batches 1,8,32,64 \
      --steps 24 --prefill 2048 --json "$OUT/bench_8b_$mode.json" 2>&1 | grep -E "decode|prefill"
  done
fi
