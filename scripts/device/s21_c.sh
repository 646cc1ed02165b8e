#!/usr/bin/env bash
# Session 21, call 3 (one H200, BUDGET s, default 360). The stream GEMM with v1's SiLU epilogue
# (gate_up streams too), its barrier setup before the PDL wait, and its ring depth at <= 16 rows
# (VERBATIM_GEMM_STREAM_STAGES 3 / 4 / 5). Bits: cuda_ops_test, the 0.6B and 8B digests of
# record with VERBATIM_GEMM=stream. Speed: engine-bench contract at batch 1 / 4 / 8 / 32 / 64,
# v1 (main's default) against stream at each depth, 2 rounds alternated, 8B, 0.6B, 1.7B.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s21_c 360
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
run_test cuda_ops_test 100
inv 06_bf16_stream $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_GEMM=stream
export EB_MIN_LEFT=40 EB_STEPS=32 EB_BATCHES=1,4,8,32,64 EB_PREFILL=0
wait_for $W/m8 100
for r in 1 2; do
  eb 8_v1_r$r $W/m8 contract
  eb 8_s5_r$r $W/m8 contract VERBATIM_GEMM=stream
  eb 8_s4_r$r $W/m8 contract VERBATIM_GEMM=stream VERBATIM_GEMM_STREAM_STAGES=4
  eb 8_s3_r$r $W/m8 contract VERBATIM_GEMM=stream VERBATIM_GEMM_STREAM_STAGES=3
  eb 06_v1_r$r $W/m06 contract
  eb 06_s5_r$r $W/m06 contract VERBATIM_GEMM=stream
  eb 06_s4_r$r $W/m06 contract VERBATIM_GEMM=stream VERBATIM_GEMM_STREAM_STAGES=4
  eb 06_s3_r$r $W/m06 contract VERBATIM_GEMM=stream VERBATIM_GEMM_STREAM_STAGES=3
done
wait_for $W/m8r 60 && {
  inv 8r_bf16_stream $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2 VERBATIM_GEMM=stream
  inv 8r_fp16_stream $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=eba874a3a0dbd45c VERBATIM_GEMM=stream
}
wait_for $W/m17 30 && {
  eb 17_v1 $W/m17 contract
  eb 17_s5 $W/m17 contract VERBATIM_GEMM=stream
  eb 17_s3 $W/m17 contract VERBATIM_GEMM=stream VERBATIM_GEMM_STREAM_STAGES=3
}
call_finish
