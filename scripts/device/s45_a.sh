#!/usr/bin/env bash
# Session 45, call a (one GPU): add_rmsnorm_from's late PDL trigger (VERBATIM_PDL_LATE_TRIGGER=1:
# the next GEMM's weight preload starts once the norm's row is loaded) against the trigger at the
# norm's start (0, main's default): the bits with it on (the 0.6B digests of record, the 8B bf16
# digest), engine-bench on the 8B, 1.7B and 0.6B alternated, and a timeline of an 8B batch-1 step
# each way. On an H200, the owed record rows too (short_record's speed rows).
# Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s45_a 540
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
inv 06_bf16_late $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_PDL_LATE_TRIGGER=1
inv 06_fp16_late $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=d4981a65b9914c52 VERBATIM_PDL_LATE_TRIGGER=1
wait_for $W/m8 150 && EB_PREFILL=0 EB_MIN_LEFT=60 EB_BATCHES=1,8,32,64 ab_many late8 $W/m8 3 \
  "start VERBATIM_PDL_LATE_TRIGGER=0" "late VERBATIM_PDL_LATE_TRIGGER=1"
wait_for $W/m8r 90 && inv 8r_bf16_late $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 \
  VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2 VERBATIM_PDL_LATE_TRIGGER=1
EB_PREFILL=0 EB_MIN_LEFT=60 ab_many late06 $W/m06 2 "start VERBATIM_PDL_LATE_TRIGGER=0" "late VERBATIM_PDL_LATE_TRIGGER=1"
wait_for $W/m17 60 && EB_PREFILL=0 EB_MIN_LEFT=60 ab_many late17 $W/m17 2 \
  "start VERBATIM_PDL_LATE_TRIGGER=0" "late VERBATIM_PDL_LATE_TRIGGER=1"
trace_decode 8_b1_start $W/m8 1 VERBATIM_PDL_LATE_TRIGGER=0
trace_decode 8_b1_late $W/m8 1 VERBATIM_PDL_LATE_TRIGGER=1
if is_h200; then
  EB_MIN_LEFT=30 EB_PREFILL=0 record_speed
fi
call_finish
