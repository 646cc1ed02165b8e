#!/usr/bin/env bash
# Session 21, call 2 (one H200, BUDGET s, default 330). The streaming decode GEMM
# (gemm_stream.cu, VERBATIM_GEMM=stream: up to 64 rows, W and x through a TMA ring fed by one
# producer warp, one CTA per SM). Bits: cuda_ops_test (stream against v1 at M 1..70 and more),
# gemm-bench's own comparison on the model shapes, the 0.6B digests of record with stream.
# Speed: gemm-bench at 1-64 rows (v1, stream, cuBLAS), then engine-bench contract, default against
# stream (and stream with the SiLU epilogue off, so gate_up streams too), 8B and 0.6B.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s21_b 330
run_test cuda_ops_test 100
timeout 100 "$VB" gemm-bench --archs qwen3-8b,qwen3-0.6b --m 1,8,16,32,64 --kernels v1,stream,cublas \
  --json $OUT/gemm_decode.json > $OUT/gemm_decode.log 2>&1
say "gemm-bench decode rc=$?"
cat $OUT/gemm_decode.log | tee -a $LOG
inv 06_bf16_stream $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_GEMM=stream
export EB_MIN_LEFT=40 EB_STEPS=32 EB_BATCHES=1,8,32,64 EB_PREFILL=0
wait_for $W/m8 100
for r in 1 2; do
  eb 8_v1_r$r $W/m8 contract
  eb 8_stream_r$r $W/m8 contract VERBATIM_GEMM=stream
  eb 8_streamnosilu_r$r $W/m8 contract VERBATIM_GEMM=stream VERBATIM_GEMM_SILU=0
  eb 06_v1_r$r $W/m06 contract
  eb 06_stream_r$r $W/m06 contract VERBATIM_GEMM=stream
done
[ "$(left)" -gt 60 ] && inv 06_fp16_stream $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=d4981a65b9914c52 VERBATIM_GEMM=stream
call_finish
