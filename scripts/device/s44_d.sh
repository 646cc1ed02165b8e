#!/usr/bin/env bash
# Session 44, call d (one GPU): the stream GEMM's W preload at <= 32 rows for every weight (the new
# default, VERBATIM_GEMM_STREAM_PRELOAD=1) against session 22's rule (weights <= 16 MiB only, now
# PRELOAD=3): the bits (op tests, the 0.6B digests of record, the 8B bf16 digest of record) and
# engine-bench on the 8B and 1.7B, alternated. On an H200, the record rows too (short_record's).
# Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s44_d 420
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
run_test cuda_ops_test 150
inv_of_record $W/m06
# ... and how many of the ring's stages to preload (VERBATIM_GEMM_STREAM_PRELOAD_STAGES; 0 = all 3).
wait_for $W/m8 150 && EB_PREFILL=0 EB_MIN_LEFT=40 EB_BATCHES=1,8,32,64 ab_many pre8 $W/m8 2 "new VERBATIM_GEMM_STREAM_PRELOAD=1" \
  "old VERBATIM_GEMM_STREAM_PRELOAD=3" "st1 VERBATIM_GEMM_STREAM_PRELOAD_STAGES=1" "st2 VERBATIM_GEMM_STREAM_PRELOAD_STAGES=2"
inv 06_bf16_st1 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_GEMM_STREAM_PRELOAD_STAGES=1
wait_for $W/m8r 90 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
wait_for $W/m17 60 && EB_PREFILL=0 EB_MIN_LEFT=40 ab_many pre17 $W/m17 2 "new VERBATIM_GEMM_STREAM_PRELOAD=1" \
  "old VERBATIM_GEMM_STREAM_PRELOAD=3" "st1 VERBATIM_GEMM_STREAM_PRELOAD_STAGES=1"
EB_PREFILL=0 EB_MIN_LEFT=40 ab_many pre06 $W/m06 2 "new VERBATIM_GEMM_STREAM_PRELOAD=1" "st1 VERBATIM_GEMM_STREAM_PRELOAD_STAGES=1"
if is_h200; then
  EB_MIN_LEFT=30 EB_PREFILL=0 record_speed
fi
call_finish
