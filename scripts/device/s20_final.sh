#!/usr/bin/env bash
# Session 20, final call (one H200, BUDGET s, default 500). Main at a7cde65: session 19's split-K
# sums through one R-element template (same bits: s20_a / s20_b). Re-measures every figure of
# record on main's code (op tests, 0.6B digests, gemm-bench at 2,048 rows, engine-bench contract /
# fast for 0.6B / 8B / 1.7B), then record_checks (8B digests, HF peer, 64-user HTTP check, model
# tests, ncu of one 8B prefill).
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s20_final 500
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
call_finish
