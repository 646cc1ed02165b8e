#!/usr/bin/env bash
# Device call 1: GPU tests, make-model acceptance by HF, logits vs HF, a first decode/prefill timing.
source "$(dirname "$0")/common.sh"
echo "gpu: $(gpu_facts)" | tee "$OUT/gpu.txt"
s=$SECONDS
timeout 200 "$VB_BIN/cuda_ops_test" --gtest_output=json:"$OUT/cuda_ops_test.json" > "$OUT/cuda_ops_test.log" 2>&1
echo "cuda_ops_test rc=$? ($((SECONDS - s)) s)"; grep -E "^\[  (FAILED|PASSED) |Failure|Expected|Which is|differs|error" "$OUT/cuda_ops_test.log" | head -30
s=$SECONDS
make_model qwen3-0.6b /tmp/m06
echo "make-model 0.6b: $((SECONDS - s)) s"
s=$SECONDS
for mode in contract fast; do
  timeout 150 "$VB_BIN/verbatim" engine-bench --model /tmp/m06 --device cuda --mode $mode --batches 1,8,64 --steps 20 \
    --prefill 2048 --json "$OUT/smoke_06_$mode.json" 2>&1 | tail -5
done
echo "bench smoke: $((SECONDS - s)) s"
s=$SECONDS
random_prompts /tmp/p.json 151936 7 33 130 300
timeout 100 "$VB_BIN/verbatim" dump-logits --model /tmp/m06 --device cuda --dtype bfloat16 --prompts /tmp/p.json --greedy 16 --out /tmp/ours06.safetensors 2>&1 | tail -1
timeout 150 python3 bench/hf_compare.py --model /tmp/m06 --prompts /tmp/p.json --ours /tmp/ours06.safetensors --greedy 16 --out "$OUT/hf_compare_06.json" 2>&1 | tail -2
echo "hf compare: $((SECONDS - s)) s"
s=$SECONDS
timeout 280 "$VB_BIN/cuda_model_test" --gtest_output=json:"$OUT/cuda_model_test.json" > "$OUT/cuda_model_test.log" 2>&1
echo "cuda_model_test rc=$? ($((SECONDS - s)) s)"; grep -E "^\[  (FAILED|PASSED) |Failure|differ|\[cuda|error|Expected" "$OUT/cuda_model_test.log" | head -40
