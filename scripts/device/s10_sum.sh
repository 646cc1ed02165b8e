#!/usr/bin/env bash
# Session 10, call 1 (one H200, ~360 s): the wgmma prefill GEMM adding split-K segments on 256-row
# CTAs, its running sums in the GEMM workspace (GemmTuning::wgmma_sum_rows, env
# VERBATIM_GEMM_WGMMA_SUM_ROWS=128 for the shared-memory path on 128-row CTAs). Bits: cuda_ops_test
# (both against v1 byte for byte, the workspace passes), the 0.6B digests of record and the 8B bf16
# one (their prefill GEMMs are split). Speed: gemm-bench at 2,048 rows (default, wgsum128, cuBLAS),
# engine-bench 2,048-token prefill 128 / 256 alternated, two rounds on 8B. ncu full sets of one
# 8B qkv launch (256-row sums) and of one prefill attention (fold) launch.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s10_sum 420
mk qwen3-8b $W/m8r 0.005 &
bits_06
gemm_2048 "" tiled,tiled:wgsum128,cublas
wait_for $W/m8 150
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30
for r in 1 2; do
  eb 8_sum128_r$r $W/m8 contract VERBATIM_GEMM_WGMMA_SUM_ROWS=128
  eb 8_sum256_r$r $W/m8 contract
done
eb 06_sum128 $W/m06 contract VERBATIM_GEMM_WGMMA_SUM_ROWS=128
eb 06_sum256 $W/m06 contract
wait_for $W/m8r 60 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
ncu_prof wg_qkv256 'gemm_wgmma' 8 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
ncu_prof fold 'attention_fold' 2 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
call_finish
