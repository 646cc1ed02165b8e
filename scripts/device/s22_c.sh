#!/usr/bin/env bash
# Session 22, call 3 (one H200, BUDGET s, default 300). add_rmsnorm_from in the stream GEMM's
# prologue (VERBATIM_GEMM_NORM=1: the qkv and gate_up GEMMs of steps <= 16 rows norm their own x;
# two launches fewer a layer). Bits: op tests (GemmNormPrologueIsAddRmsNormThenTheGemm), the 0.6B
# digests of record and the 8B bf16 digest with it on. Speed: on / off alternated 2 rounds, 0.6B
# and 8B, batch 1 / 8 / 16.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s22_c 300
( wait_for $W/m8 200; mk qwen3-8b $W/m8r 0.005 ) &
run_test cuda_ops_test 100
inv 06_bf16_norm $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_GEMM_NORM=1
inv 06_fp16_norm $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=d4981a65b9914c52 VERBATIM_GEMM_NORM=1
wait_for $W/m8 100
export EB_MIN_LEFT=20 EB_PREFILL=0 EB_BATCHES=1,8,16
for m in 06 8; do
  ab_many norm_$m $W/m$m 2 "off VERBATIM_GEMM_NORM=0" "on VERBATIM_GEMM_NORM=1"
done
wait_for $W/m8r 40 && inv 8r_bf16_norm $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 \
  VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2 VERBATIM_GEMM_NORM=1
call_finish
