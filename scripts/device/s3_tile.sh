#!/usr/bin/env bash
# Session 3, call 9 (x2 machine, ~150 s): the attention tile kernel (one-warp items of one-tile
# parts with K straight from the cache and V alone in shared memory; same bits as the per-part
# kernel). GPU 1: cuda_ops_test (both kernels against the fold, bit for bit), cuda_model_test, the
# invariance matrix on 0.6B bf16 and fp16 (digests must be 02fdf9975bf8eafb and 9ca352b0e004b7b3,
# as before the kernel). GPU 0, timed: engine-bench decode 0.6B and 8B with the tile kernel (the
# default) and without (VERBATIM_ATTN_TILE_KERNEL=0), then ncu of one 8B batch-32 step.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-150}
call_setup s3_tile
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
lane1() {
  export CUDA_VISIBLE_DEVICES=1
  for t in cuda_ops_test cuda_model_test; do
    timeout 100 "$VB_BIN/$t" > $OUT/$t.log 2>&1
    say "GPU1 $t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/$t.log | tr '\n' ' ')"
    grep -E "Failure|differ|Expected|Which is" $OUT/$t.log | head -8 | tee -a $LOG
  done
  for dt in bfloat16 float16; do
    VERBATIM_TEST_MODEL_DIR=$W/m06 VERBATIM_TEST_DTYPE=$dt timeout 60 "$VB_BIN/cuda_invariance_test" \
      --gtest_filter="$([ $dt = float16 ] && echo F16 || echo BF16)/*" > $OUT/inv_06_$dt.log 2>&1
    say "GPU1 invariance 0.6B $dt rc=$? $(grep -E '^\[  (PASSED|FAILED) |digest' $OUT/inv_06_$dt.log | tr '\n' ' ')"
  done
}
lane1 &
export CUDA_VISIBLE_DEVICES=0
eb() {  # tag dir [env...]
  local tag=$1 dir=$2
  shift 2
  env "$@" timeout 40 "$VB" engine-bench --model "$dir" --device cuda --batches 1,8,32,64 --context 1024 --steps 32 \
    --prefill 0 --json $OUT/eb_$tag.json > $OUT/eb_$tag.log 2>&1
  say "eb $tag rc=$? ($*): $(grep -E 'decode' $OUT/eb_$tag.log | sed -E 's/.*batch +([0-9]+): median +([0-9.]+) ms.*/b\1 \2/' | tr '\n' ' ')"
}
eb 06_tile $W/m06
eb 06_part $W/m06 VERBATIM_ATTN_TILE_KERNEL=0
while [ ! -f $W/m8.done ] && [ "$(left)" -gt 50 ]; do sleep 2; done
eb 8_tile $W/m8
eb 8_part $W/m8 VERBATIM_ATTN_TILE_KERNEL=0
if [ "$(left)" -gt 40 ]; then
  timeout 30 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base --launch-count 4000 \
    "$VB" engine-bench --model $W/m8 --device cuda --batches 32 --context 1024 --steps 2 --prefill 0 --no-context-prefill \
    > $W/ncu.csv 2> /dev/null
  python3 scripts/device/ncu_summary.py $W/ncu.csv $OUT/ncu_8_b32.txt > /dev/null
  head -6 $OUT/ncu_8_b32.txt | tee -a $LOG
fi
wait
call_finish
