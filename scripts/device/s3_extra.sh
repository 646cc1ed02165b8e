#!/usr/bin/env bash
# Session 3, last call (x2 machine, ~170 s): the invariance matrix on an 8B folder that repeats
# itself (init std 0.005: drafts get accepted, so its speculation case is not vacuous), GPU 0;
# then tensor parallel 8B at TP=2 on both GPUs: engine-bench with the fixed-order all-gather (the
# contract) and with NCCL's all-reduce (the control), decode at batch 1/8/32/64 and prefill.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-170}
call_setup s3_extra
mk qwen3-8b $W/m8r 0.005
CUDA_VISIBLE_DEVICES=0 VERBATIM_TEST_MODEL_DIR=$W/m8r VERBATIM_TEST_DTYPE=bfloat16 VERBATIM_TEST_MAX_TOKENS=8 timeout 90 \
  "$VB_BIN/cuda_invariance_test" --gtest_filter='BF16/*' > $OUT/inv_8r_bf16.log 2>&1
say "invariance 8B (std 0.005) bf16 rc=$? $(grep -E '^\[  (PASSED|FAILED) |digest|drafts' $OUT/inv_8r_bf16.log | tr '\n' ' ')"
for r in allgather allreduce; do
  [ "$(left)" -lt 40 ] && break
  timeout 45 "$VB" engine-bench --model $W/m8r --device cuda --tensor-parallel-size 2 --tp-reduce $r --batches 1,8,32,64 \
    --context 1024 --steps 24 --prefill 2048 --json $OUT/eb_8_tp2_$r.json > $OUT/eb_8_tp2_$r.log 2>&1
  say "eb 8B TP=2 $r rc=$?: $(grep -E 'decode|prefill [0-9]' $OUT/eb_8_tp2_$r.log | sed -E 's/.*batch +([0-9]+): median +([0-9.]+) ms.*/b\1 \2/; s/prefill 2048 tokens: median ([0-9.]+) ms, ([0-9.]+) TFLOP.*/prefill \1 ms \2 TF/' | tr '\n' ' ')"
done
call_finish
