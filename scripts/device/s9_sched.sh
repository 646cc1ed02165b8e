#!/usr/bin/env bash
# Session 9, call 3 (one H200, ~300 s): the wgmma prefill GEMM's schedule (GemmTuning::wgmma_sched,
# env VERBATIM_GEMM_WGMMA_SCHED): bit 0 A fragments read before the stage's barrier (a thread now
# copies the x units it reads), bit 1 the staged W fenced before the next copies are issued.
# Bits: cuda_ops_test (schedules 0-3 against v1), gemm-bench's v1-bit column, the 0.6B digests
# with schedule 3 (the default) and 0. Speed: gemm-bench at 2,048 rows for schedules 0-3, engine-
# bench 2,048-token prefill alternated 0 / 3, two rounds on 8B; ncu of one gate_up launch (schedule
# 3) and the per-kernel durations of one 8B 2,048-token prefill.
# Ran on a binary whose knob (VERBATIM_GEMM_WGMMA_SCHED) was removed after it (no schedule
# differed): kept as the record of h200_s9_sched_*.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s9_sched 420
run_test cuda_ops_test 150
for s in 0 1 2 3; do
  VERBATIM_GEMM_WGMMA_SCHED=$s timeout 60 "$VB" gemm-bench --archs qwen3-8b,qwen3-0.6b --m 2048 --kernels tiled \
    --json $OUT/gemm_2048_sched$s.json > $OUT/gemm_2048_sched$s.log 2>&1
  say "gemm-bench 2048 schedule $s rc=$?"
  grep -E "qwen3" $OUT/gemm_2048_sched$s.log | grep -v lm_head | tee -a $LOG
done
inv 06_bf16 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb
inv 06_fp16_s0 $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=9ca352b0e004b7b3 VERBATIM_GEMM_WGMMA_SCHED=0
wait_for $W/m8 120
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30
for r in 1 2; do
  eb 8_s0_r$r $W/m8 contract VERBATIM_GEMM_WGMMA_SCHED=0
  eb 8_s3_r$r $W/m8 contract
done
eb 06_s0 $W/m06 contract VERBATIM_GEMM_WGMMA_SCHED=0
eb 06_s3 $W/m06 contract
ncu_prof wg_gate_up 'gemm_wgmma' 10 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
timeout 100 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
  "$VB" engine-bench --model $W/m8 --device cuda --batches 1 --context 64 --steps 1 --prefill 2048 \
  --no-context-prefill > $W/ncu_prefill.csv 2> $W/ncu_prefill.err
say "ncu prefill rc=$?"
python3 scripts/device/ncu_summary.py $W/ncu_prefill.csv $OUT/ncu_prefill_8.txt > /dev/null
head -16 $OUT/ncu_prefill_8.txt | tee -a $LOG
call_finish
