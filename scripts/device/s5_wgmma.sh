#!/usr/bin/env bash
# Session 5 (written, not yet run: no device time was left), one H200, BUDGET s (default 540): the
# wgmma prefill GEMM (gemm_wgmma.cu), off by default until this call shows its bits.
# Its bits first (cuda_ops_test: GemmKernelsAreV1BitForBit compares it with v1; the 0.6B
# invariance matrix against the digests of record), then its speed: gemm-bench at 2,048 rows on
# the 8B and 0.6B linear layers (tiled on mma.sync, wgmma with segments to partials or added in
# the kernel, cuBLAS), engine-bench prefill with and without it, cuda_model_test.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-540}
call_setup s5_wgmma
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
( mk qwen3-8b $W/m8 0.02 ) &
run_test cuda_ops_test 150
timeout 120 "$VB" gemm-bench --archs qwen3-8b,qwen3-0.6b --m 2048 \
  --kernels tiled:mma,tiled:wgnocombine,tiled:wgcombine,tiled:wgmma,cublas --json $OUT/gemm_2048.json > $OUT/gemm_2048.log 2>&1
say "gemm-bench 2048 rc=$?"
grep -E "TFLOP|qkv|gate_up|down|lm_head| o " $OUT/gemm_2048.log | head -40 | tee -a $LOG
inv_of_record $W/m06  # the default (mma.sync) path
inv 06_bf16_wg $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb VERBATIM_GEMM_WGMMA=1
inv 06_fp16_wg $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=9ca352b0e004b7b3 VERBATIM_GEMM_WGMMA=1
EB_BATCHES=1 EB_STEPS=8 eb 06_wg $W/m06 contract VERBATIM_GEMM_WGMMA=1
EB_BATCHES=1 EB_STEPS=8 eb 06_mma $W/m06 contract VERBATIM_GEMM_WGMMA=0
wait_for $W/m8 200
EB_BATCHES=1,32 EB_STEPS=8 eb 8_wg $W/m8 contract VERBATIM_GEMM_WGMMA=1
EB_BATCHES=1,32 EB_STEPS=8 eb 8_mma $W/m8 contract VERBATIM_GEMM_WGMMA=0
EB_BATCHES=1 EB_STEPS=8 eb 8_wg_combine $W/m8 contract VERBATIM_GEMM_WGMMA=1 VERBATIM_GEMM_WGMMA_COMBINE=1
EB_BATCHES=1 EB_STEPS=8 eb 8_fast $W/m8 fast
if [ "$(left)" -gt 90 ]; then
  run_test cuda_model_test $(( $(left) - 20 ))
  grep -E "\[cuda parity" $OUT/cuda_model_test.log | head -8 | tee -a $LOG
fi
call_finish
