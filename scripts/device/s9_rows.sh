#!/usr/bin/env bash
# Session 9, call 2 (one H200, ~400 s): the wgmma prefill GEMM with W through shared memory (now
# its only path) and 256-row CTAs where it does not add segments (GemmTuning::wgmma_rows, env
# VERBATIM_GEMM_WGMMA_ROWS=256) against 128. Bits: cuda_ops_test (both row counts against v1 byte
# for byte), gemm-bench's v1-bit column, the 0.6B digests of record with 256 rows. Speed:
# gemm-bench at 2,048 rows, engine-bench 2,048-token prefill alternated 128 / 256, two rounds on
# 8B. ncu full sets of one 8B gate_up launch (layer 2) with each, and of a qkv launch (combine).
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s9_rows 480
run_test cuda_ops_test 150
timeout 120 "$VB" gemm-bench --archs qwen3-8b,qwen3-0.6b --m 2048 --kernels tiled,tiled:wg256,cublas \
  --json $OUT/gemm_2048.json > $OUT/gemm_2048.log 2>&1
say "gemm-bench 2048 rc=$?"
cat $OUT/gemm_2048.log | tee -a $LOG
inv 06_bf16_r256 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb VERBATIM_GEMM_WGMMA_ROWS=256
inv 06_fp16_r256 $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=9ca352b0e004b7b3 VERBATIM_GEMM_WGMMA_ROWS=256
wait_for $W/m8 150
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30
for r in 1 2; do
  eb 8_r128_r$r $W/m8 contract
  eb 8_r256_r$r $W/m8 contract VERBATIM_GEMM_WGMMA_ROWS=256
done
eb 06_r128 $W/m06 contract
eb 06_r256 $W/m06 contract VERBATIM_GEMM_WGMMA_ROWS=256
ncu_prof wg_gate_up128 'gemm_wgmma' 10 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
VERBATIM_GEMM_WGMMA_ROWS=256 ncu_prof wg_gate_up256 'gemm_wgmma' 10 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
ncu_prof wg_qkv 'gemm_wgmma' 8 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
call_finish
