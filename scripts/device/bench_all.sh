#!/usr/bin/env bash
# Device: engine-level decode/prefill benchmarks (contract vs fast) for the 0.6B, 1.7B and 8B
# shapes, HF transformers as the peer in the same call, and the 8B logits vs HF.
# Usage: bench_all.sh [archs...]   (default: qwen3-0.6b qwen3-1.7b qwen3-8b)
source "$(dirname "$0")/common.sh"
ARCHS=("$@"); [ ${#ARCHS[@]} -eq 0 ] && ARCHS=(qwen3-0.6b qwen3-1.7b qwen3-8b)
echo "gpu: $(gpu_facts)" | tee "$OUT/gpu.txt"
for arch in "${ARCHS[@]}"; do
  d=/tmp/m-$arch; s=$SECONDS
  make_model "$arch" "$d"; echo "make-model $arch: $((SECONDS - s)) s"
  for mode in contract fast; do
    s=$SECONDS
    timeout 240 "$VB_BIN/verbatim" engine-bench --model "$d" --device cuda --mode $mode --batches 1,8,32,64 --context 1024 \
      --steps 32 --prefill 2048 --json "$OUT/bench_${arch}_$mode.json" 2>&1 | grep -E "decode|prefill" 
    echo "  ($mode: $((SECONDS - s)) s; clocks now: $(gpu_facts | cut -d, -f3,4))"
  done
  s=$SECONDS
  timeout 200 python3 bench/hf_peer.py --model "$d" --batches 1,8,32,64 --context 1024 --steps 10 --prefill 2048 \
    --out "$OUT/hf_peer_${arch}.json" 2>&1 | grep -E "^HF"
  echo "  (HF peer: $((SECONDS - s)) s)"
done
if [ -d /tmp/m-qwen3-8b ]; then
  s=$SECONDS
  random_prompts /tmp/p8.json 151936 7 33 130 300
  timeout 100 "$VB_BIN/verbatim" dump-logits --model /tmp/m-qwen3-8b --device cuda --dtype bfloat16 --prompts /tmp/p8.json \
    --greedy 16 --out /tmp/ours8.safetensors 2>&1 | tail -1
  timeout 200 python3 bench/hf_compare.py --model /tmp/m-qwen3-8b --prompts /tmp/p8.json --ours /tmp/ours8.safetensors \
    --greedy 16 --out "$OUT/hf_compare_qwen3-8b.json" 2>&1 | tail -1
  echo "8B HF compare: $((SECONDS - s)) s"
fi
