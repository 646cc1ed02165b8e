#!/usr/bin/env bash
# Session 18, final call (one H200, BUDGET s, default 560). Main now runs qkv_post for >= 65 tokens
# on warps looping over the items (s18_a: 8B prefill -0.2 to -1.4%, same bits); the rest is session
# 17's main. Re-measures every figure of record (op tests, 0.6B digests, gemm-bench at 2,048 rows,
# engine-bench contract / fast for 0.6B / 8B / 1.7B), then an A/B of the prefill glue knobs (that
# kernel's blocks per SM 8 / 4 or off; add_rmsnorm's threads per row at many rows 256 / 128 / 512),
# then record_checks (8B digests, HF peer, 64-user HTTP check, model tests, ncu of one 8B prefill).
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s18_final 560
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
V=("b8" "b4 VERBATIM_QKV_POST_LOOP_BLOCKS=4" "off VERBATIM_QKV_POST_LOOP=0" "n128 VERBATIM_NORM_MANY_ROWS_THREADS=128"
   "n512 VERBATIM_NORM_MANY_ROWS_THREADS=512")
EB_BATCHES=1 EB_STEPS=4 ab_many pf8 $W/m8 2 "${V[@]}"
wait_for $W/m17 100 && {
  eb 17_contract $W/m17 contract
  eb 17_fast $W/m17 fast
}
record_checks
call_finish
