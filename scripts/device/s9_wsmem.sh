#!/usr/bin/env bash
# Session 9, call 1 (one H200, ~400 s): the wgmma prefill GEMM with W copied through shared memory
# by cp.async (GemmTuning::wgmma_w_stages 4 / 5 / 6) against W through registers (0, the default
# of this binary). Bits: cuda_ops_test (every wgmma variant against v1 byte for byte), gemm-bench's
# v1-bit column at 2,048 rows, the 0.6B digests of record with 6 stages. Speed: gemm-bench at
# 2,048 rows (8B and 0.6B shapes, cuBLAS beside), engine-bench 2,048-token prefill alternated
# between the paths, two rounds on 8B. Ran on a binary whose knobs (wgsmem4/5/6,
# VERBATIM_GEMM_WGMMA_W_STAGES) were removed after it: kept as the record of h200_s9_wsmem_*.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s9_wsmem 480
run_test cuda_ops_test 150
timeout 150 "$VB" gemm-bench --archs qwen3-8b,qwen3-0.6b --m 2048 \
  --kernels tiled,tiled:wgsmem4,tiled:wgsmem5,tiled:wgsmem6,cublas --json $OUT/gemm_2048.json > $OUT/gemm_2048.log 2>&1
say "gemm-bench 2048 rc=$?"
cat $OUT/gemm_2048.log | tee -a $LOG
inv 06_bf16_s6 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb VERBATIM_GEMM_WGMMA_W_STAGES=6
inv 06_fp16_s4 $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=9ca352b0e004b7b3 VERBATIM_GEMM_WGMMA_W_STAGES=4
wait_for $W/m8 150
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30
for r in 1 2; do
  eb 8_reg_r$r $W/m8 contract
  eb 8_s6_r$r $W/m8 contract VERBATIM_GEMM_WGMMA_W_STAGES=6
  eb 8_s4_r$r $W/m8 contract VERBATIM_GEMM_WGMMA_W_STAGES=4
done
eb 06_reg $W/m06 contract
eb 06_s6 $W/m06 contract VERBATIM_GEMM_WGMMA_W_STAGES=6
eb 06_s5 $W/m06 contract VERBATIM_GEMM_WGMMA_W_STAGES=5
call_finish
