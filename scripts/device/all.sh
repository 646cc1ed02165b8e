#!/usr/bin/env bash
# One device call: GPU tests, then benchmarks (bench_all.sh order: 0.6B, 8B, 1.7B), skipping
# what would not finish inside the 10-minute call limit (BUDGET seconds).
source "$(dirname "$0")/common.sh"
BUDGET=${BUDGET:-540}
left() { echo $((BUDGET - SECONDS)); }
echo "gpu: $(gpu_facts)" | tee "$OUT/gpu.txt"
s=$SECONDS
timeout 120 "$VB_BIN/cuda_ops_test" --gtest_output=json:"$OUT/cuda_ops_test.json" > "$OUT/cuda_ops_test.log" 2>&1
echo "cuda_ops_test rc=$? ($((SECONDS - s)) s)"; grep -E "^\[  (FAILED|PASSED) |Failure|Expected|Which is|differs" "$OUT/cuda_ops_test.log" | head -12
s=$SECONDS
timeout 200 "$VB_BIN/cuda_model_test" --gtest_output=json:"$OUT/cuda_model_test.json" > "$OUT/cuda_model_test.log" 2>&1
echo "cuda_model_test rc=$? ($((SECONDS - s)) s)"; grep -E "^\[  (FAILED|PASSED) |Failure|differ|\[cuda" "$OUT/cuda_model_test.log" | head -24
bench() {  # arch
  local arch=$1 d=/tmp/m-$1
  make_model "$arch" "$d"
  for mode in contract fast; do
    [ "$(left)" -lt 40 ] && { echo "skip $arch $mode: out of time"; return; }
    timeout $(( $(left) - 20 )) "$VB_BIN/verbatim" engine-bench --model "$d" --device cuda --mode $mode --batches 1,8,32,64 \
      --context 1024 --steps 32 --prefill 2048 --json "$OUT/bench_${arch}_$mode.json" 2>&1 | grep -E "decode|prefill" | sed "s/^/$arch $mode: /"
  done
  [ "$(left)" -lt 60 ] && { echo "skip HF peer $arch"; return; }
  timeout $(( $(left) - 20 )) python3 bench/hf_peer.py --model "$d" --batches 1,8,32,64 --context 1024 --steps 8 --prefill 2048 \
    --out "$OUT/hf_peer_${arch}.json" 2>&1 | grep -E "^HF" | sed "s/^/$arch /"
}
bench qwen3-0.6b
bench qwen3-8b
if [ "$(left)" -gt 150 ]; then
  random_prompts /tmp/p8.json 151936 7 33 130 300
  timeout 60 "$VB_BIN/verbatim" dump-logits --model /tmp/m-qwen3-8b --device cuda --dtype bfloat16 --prompts /tmp/p8.json \
    --greedy 16 --out /tmp/ours8.safetensors 2>&1 | tail -1
  timeout $(( $(left) - 15 )) python3 bench/hf_compare.py --model /tmp/m-qwen3-8b --prompts /tmp/p8.json --ours /tmp/ours8.safetensors \
    --greedy 16 --out "$OUT/hf_compare_qwen3-8b.json" 2>&1 | tail -1
fi
[ "$(left)" -gt 90 ] && bench qwen3-1.7b
echo "total $SECONDS s"
