#!/usr/bin/env bash
# Session 11, final call (one H200, BUDGET s, default 560): the figures of record with this
# session's prefill changes (the wgmma GEMM's x and W by tensor maps; the fold attention's bulk
# loads and 32-column P·V fold), against session 10's prefill path in the same binary
# (VERBATIM_GEMM_WGMMA_TMA=0 VERBATIM_ATTN_FOLD_PV=1: its GEMM copies and its fold kernel). As
# s10_final otherwise: the
# op tests, the 0.6B digests, gemm-bench at 2,048 rows, engine-bench contract and fast for 0.6B /
# 1.7B / 8B, the 8B digests (bf16 and fp16, init std 0.005), the HF peer, the 64-user HTTP check,
# the model tests, the per-kernel durations of one 8B prefill.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s11_final 560
( mk qwen3-1.7b $W/m17 0.02; mk qwen3-8b $W/m8r 0.005 ) &
S10="VERBATIM_GEMM_WGMMA_TMA=0 VERBATIM_ATTN_FOLD_PV=1"
bits_06
gemm_2048 "" tiled,tiled:wgcp,cublas
wait_for $W/m8 200
export EB_MIN_LEFT=30
EB_BATCHES=1 EB_STEPS=8 ab_vars 8p $W/m8 2 s10 "$S10" new ""
EB_BATCHES=1 EB_STEPS=8 ab_vars 06p $W/m06 1 s10 "$S10" new ""
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
eb 8_contract $W/m8 contract
eb 8_fast $W/m8 fast
wait_for $W/m17 200 && {
  EB_BATCHES=1 EB_STEPS=8 ab_vars 17p $W/m17 1 s10 "$S10" new ""
  eb 17_contract $W/m17 contract
  eb 17_fast $W/m17 fast
}
record_checks
call_finish
