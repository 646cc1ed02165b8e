#!/usr/bin/env bash
# Session 17, call 3 (one H200, BUDGET s, default 240). More of W in flight in the v1 decode GEMM
# at 17-64 rows: VERBATIM_GEMM_V1_UNROLL32=6|8 (32-k chunks a load round at 17..32 rows; 4 by
# default) and VERBATIM_GEMM_V1_M64=3 (64 x 16 tiles with 4 chunks a round at 33..64 rows instead
# of 2). Same MMAs in the same order: cuda_ops_test compares each with v1, and the 0.6B digests of
# record run with them on. Speed: gemm-bench at 32 and 64 rows (8B layers), then 8B and 0.6B
# decode at batch 24 / 32 / 48 / 64, variants alternated.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s17_b 240
run_test cuda_ops_test 100
inv 06_bf16_u $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_GEMM_V1_UNROLL32=6 VERBATIM_GEMM_V1_M64=3
timeout 60 "$VB" gemm-bench --archs qwen3-8b --m 32,64 --kernels "v1,v1:u32x6,v1:u32x8,v1:m64u4,cublas" \
  --json $OUT/gemm_32_64.json > $OUT/gemm_32_64.log 2>&1
say "gemm-bench 32/64 rc=$?"; cat $OUT/gemm_32_64.log | tee -a $LOG
wait_for $W/m8 60
export EB_MIN_LEFT=20 EB_PREFILL=0 EB_BATCHES=24,32,48,64
V=("base" "u6 VERBATIM_GEMM_V1_UNROLL32=6" "u8 VERBATIM_GEMM_V1_UNROLL32=8" "m3 VERBATIM_GEMM_V1_M64=3"
   "u6m3 VERBATIM_GEMM_V1_UNROLL32=6 VERBATIM_GEMM_V1_M64=3")
ab_many un8 $W/m8 2 "${V[@]}"
ab_many un06 $W/m06 1 "${V[@]}"
call_finish
