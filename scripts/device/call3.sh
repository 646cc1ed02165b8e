#!/usr/bin/env bash
# Device: GPU tests again, then engine-bench (contract vs fast) for the three shapes; the HF
# peer numbers of run 2 stand (HF did not change).
source "$(dirname "$0")/common.sh"
echo "gpu: $(gpu_facts)"
s=$SECONDS
timeout 120 "$VB_BIN/cuda_ops_test" > "$OUT/ops.log" 2>&1
echo "cuda_ops_test rc=$? ($((SECONDS - s)) s)"; grep -E "^\[  (FAILED|PASSED) |Failure|Expected|Which is|differs" "$OUT/ops.log" | head -12
s=$SECONDS
timeout 200 "$VB_BIN/cuda_model_test" > "$OUT/model.log" 2>&1
echo "cuda_model_test rc=$? ($((SECONDS - s)) s)"; grep -E "^\[  (FAILED|PASSED) |Failure|differ|\[cuda" "$OUT/model.log" | head -24
for arch in qwen3-0.6b qwen3-8b qwen3-1.7b; do
  d=/tmp/m-$arch; make_model "$arch" "$d" >/dev/null
  for mode in contract fast; do
    [ $SECONDS -gt 330 ] && { echo "skip $arch $mode"; continue; }
    timeout 70 "$VB_BIN/verbatim" engine-bench --model "$d" --device cuda --mode $mode --batches 1,8,32,64 --context 1024 \
      --steps 32 --prefill 2048 --json "$OUT/b_${arch}_$mode.json" 2>&1 | grep -E "decode|prefill" | sed "s/^/$arch $mode: /"
  done
done
echo "total $SECONDS s"
