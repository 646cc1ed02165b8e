#!/usr/bin/env bash
# Session 10, call 5 (one H200, ~300 s): two fixes after the final call. (1) The launch chose 128-row
# CTAs whenever GemmTuning::wgmma_sum_rows was "by size" (-1), so the engine never ran the 256-row
# kernel adding segments with its sums in the workspace (gemm-bench's forced wgsum256 did: 8B qkv
# 298 TFLOP/s against 259). (2) With one set of A fragments (256 rows, LAG 0) the K loop is one body
# again, not two copies (8B gate_up 320 against 339 in call 1). Against the final call's binary
# (carried as verbatim_prev): bits (cuda_ops_test, the 0.6B digests, the 8B bf16 and fp16 digests,
# whose prefill now runs the 256-row adding kernel), gemm-bench at 2,048 rows, engine-bench
# 2,048-token prefill alternated old / new (two rounds on 8B, one on 1.7B and 0.6B), the per-kernel
# durations of one 8B prefill.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test,
# plus the final call's verbatim as verbatim_prev.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s10_fix 330
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
PREV=$VB_BIN/verbatim_prev
bits_06
gemm_2048 "" tiled,tiled:wgsum128,cublas
wait_for $W/m8 150
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30
ab_eb $PREV prev 8p $W/m8 2
ab_eb $PREV prev 06p $W/m06 1
wait_for $W/m8r 100 && {
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
  inv 8r_fp16 $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=7e58f529cd75d598
}
wait_for $W/m17 30 && ab_eb $PREV prev 17p $W/m17 1
ncu_prefill $W/m8
call_finish
