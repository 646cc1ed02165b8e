#!/usr/bin/env bash
# Session 3, call 6 (x2 machine, ~200 s): the attention tile loads with the block ids read once per
# warp (same bits). GPU 0 (timed only): engine-bench decode 8B and 0.6B (batches 1, 8, 32, 64),
# ncu of one 8B batch-32 step. GPU 1: cuda_ops_test, cuda_model_test, the invariance matrix on 0.6B.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-200}
call_setup s3_attn
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
lane1() {
  export CUDA_VISIBLE_DEVICES=1
  for t in cuda_ops_test cuda_model_test; do
    timeout 100 "$VB_BIN/$t" > $OUT/$t.log 2>&1
    say "GPU1 $t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/$t.log | tr '\n' ' ')"
    grep -E "Failure|differ" $OUT/$t.log | head -5 | tee -a $LOG
  done
  VERBATIM_TEST_MODEL_DIR=$W/m06 VERBATIM_TEST_DTYPE=bfloat16 timeout 100 "$VB_BIN/cuda_invariance_test" \
    --gtest_filter='BF16/*' > $OUT/inv_06.log 2>&1
  say "GPU1 invariance 0.6B rc=$? $(grep -E '^\[  (PASSED|FAILED) |digest' $OUT/inv_06.log | tr '\n' ' ')"
}
lane1 &
export CUDA_VISIBLE_DEVICES=0
eb() {  # tag dir
  timeout 60 "$VB" engine-bench --model "$2" --device cuda --batches 1,8,32,64 --context 1024 --steps 32 \
    --prefill 2048 --json $OUT/eb_$1.json > $OUT/eb_$1.log 2>&1
  say "eb $1 rc=$?: $(grep -E 'decode|prefill [0-9]' $OUT/eb_$1.log | sed -E 's/.*batch +([0-9]+): median +([0-9.]+) ms.*/b\1 \2/; s/prefill 2048 tokens: median ([0-9.]+) ms, ([0-9.]+) TFLOP.*/prefill \1 ms \2 TF/' | tr '\n' ' ')"
}
eb 06 $W/m06
while [ ! -f $W/m8.done ] && [ "$(left)" -gt 60 ]; do sleep 2; done
eb 8 $W/m8
timeout 50 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base --launch-count 4000 \
  "$VB" engine-bench --model $W/m8 --device cuda --batches 32 --context 1024 --steps 2 --prefill 0 --no-context-prefill \
  > $W/ncu.csv 2> /dev/null
python3 scripts/device/ncu_summary.py $W/ncu.csv $OUT/ncu_8_b32.txt > /dev/null
head -8 $OUT/ncu_8_b32.txt | tee -a $LOG
wait
call_finish
