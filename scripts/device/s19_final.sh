#!/usr/bin/env bash
# Session 19, final call (one H200, BUDGET s, default 540). Main now loads a split's partials before
# their fixed-order adds (s19_a: same bits; 8B b1 -2.0%, 0.6B b1 -7.5%). Re-measures every figure of
# record (op tests, 0.6B digests, gemm-bench at 2,048 rows, engine-bench contract / fast for 0.6B /
# 8B / 1.7B), then an A/B of the merge fused into the attention kernels (VERBATIM_ATTN_FUSED_MERGE=1,
# slower in session 8, re-tried on today's glue) against the merge kernel at 8B and 0.6B, then
# record_checks (8B digests, HF peer, 64-user HTTP check, model tests, ncu of one 8B prefill).
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s19_final 540
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
V=("sep" "fused VERBATIM_ATTN_FUSED_MERGE=1")
EB_PREFILL=0 EB_STEPS=24 ab_many mg8 $W/m8 2 "${V[@]}"
EB_PREFILL=0 EB_STEPS=24 ab_many mg06 $W/m06 2 "${V[@]}"
wait_for $W/m17 100 && {
  eb 17_contract $W/m17 contract
  eb 17_fast $W/m17 fast
}
record_checks
call_finish
