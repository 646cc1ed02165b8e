#!/usr/bin/env bash
# Session 9, call 4 (one H200, ~150 s): SiLU·mul in the wgmma prefill GEMM's epilogue (8B gate_up,
# split 1, > 64 rows; gate and up in the two 64-column halves of a tile). Bits: cuda_ops_test (the
# epilogue against gemm + silu_mul at 65 / 129 / 256 / 300 rows, both tile heights), the 8B bf16
# digest of record (init std 0.005, 8 tokens; its steps run the epilogue past 64 rows). Speed:
# engine-bench 2,048-token prefill VERBATIM_GEMM_SILU=0 (separate kernel) against the default,
# alternated, two rounds on 8B.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s9_silu 200
mk qwen3-8b $W/m8r 0.005 &
run_test cuda_ops_test 150
wait_for $W/m8 120
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30
for r in 1 2; do
  eb 8_nosilu_r$r $W/m8 contract VERBATIM_GEMM_SILU=0
  eb 8_silu_r$r $W/m8 contract
done
wait_for $W/m8r 60 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
call_finish
