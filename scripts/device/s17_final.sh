#!/usr/bin/env bash
# Session 17, final call (one H200, BUDGET s, default 480). Main now has session 16's sampler patch
# (sampler.cu's block sum / max / min through one block_reduce template; bits checked in s17_a).
# The kernels are otherwise session 16's, so this call re-measures every figure of record on main:
# the op tests and the 0.6B digests, gemm-bench at 2,048 rows (contract / cuBLAS), engine-bench
# contract and fast for 0.6B / 1.7B / 8B (8B twice: the figure and its spread), then record_checks
# (the 8B digests, the HF peer, the 64-user HTTP check greedy and seeded, the model tests, the
# per-kernel durations of one 8B prefill), and ncu of one 8B decode step at batch 32 (where the
# 1.2x target is furthest).
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s17_final 480
( mk qwen3-1.7b $W/m17 0.02; mk qwen3-8b $W/m8r 0.005 ) &
bits_06
gemm_2048 "" "tiled,cublas"
wait_for $W/m8 200
export EB_MIN_LEFT=30
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
eb 8_contract $W/m8 contract
eb 8_fast $W/m8 fast
eb 8_contract_r2 $W/m8 contract
wait_for $W/m17 100 && {
  eb 17_contract $W/m17 contract
  eb 17_fast $W/m17 fast
}
record_checks
[ "$(left)" -gt 50 ] && ncu_steps 8_b32 $W/m8 32
call_finish
