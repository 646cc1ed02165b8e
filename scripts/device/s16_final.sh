#!/usr/bin/env bash
# Session 16, final call (one H200, BUDGET s, default 560). Main's wgmma prefill GEMM now runs one
# CTA per SM over a 1-D tile grid with its loader moving by additions (session 15's patch, call 1
# of this session) and each stage's two chunks as one 64-k box in the 128-byte swizzle, both on by
# default (VERBATIM_GEMM_WGMMA_PERSIST, VERBATIM_GEMM_WGMMA_PAIRS). Bits: the op tests (every form
# against v1) and the 0.6B digests; gemm-bench at 2,048 rows (plain / pairs / both / cuBLAS); the
# 2,048-token prefill plain / pairs / both (8B two rounds, 0.6B one); then the figures of record:
# engine-bench contract and fast for 0.6B / 1.7B / 8B, and record_checks (the 8B digests, the HF
# peer, the 64-user HTTP check, the model tests, the per-kernel durations of one 8B prefill).
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s16_final 560
( mk qwen3-1.7b $W/m17 0.02; mk qwen3-8b $W/m8r 0.005 ) &
bits_06
gemm_2048 "" "tiled:wgplain,tiled:wgpair,tiled,cublas"
wait_for $W/m8 200
export EB_MIN_LEFT=30
V=("plain VERBATIM_GEMM_WGMMA_PAIRS=0 VERBATIM_GEMM_WGMMA_PERSIST=0" "pair VERBATIM_GEMM_WGMMA_PERSIST=0" "both")
EB_BATCHES=1 EB_STEPS=4 ab_many pre8 $W/m8 2 "${V[@]}"
EB_BATCHES=1 EB_STEPS=4 ab_many pre06 $W/m06 1 "${V[@]}"
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
eb 8_contract $W/m8 contract
eb 8_fast $W/m8 fast
wait_for $W/m17 100 && {
  eb 17_contract $W/m17 contract
  eb 17_fast $W/m17 fast
}
record_checks
call_finish
