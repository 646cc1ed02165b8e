#!/usr/bin/env bash
# Session 45, call b (one GPU): the row norm's block size at decode (VERBATIM_NORM_DECODE_THREADS).
# At 4,096 columns add_rmsnorm_from runs one 1,024-thread block a row (~57k registers), so the next
# GEMM's CTA on that SM (~10k registers; PDL launches it while the norm runs) cannot be resident
# until the norm ends, and starts late without its preloaded stages. 512 / 256 threads leave room.
# Bits (the 8B bf16 digest with 128 threads; the 0.6B ones are at 256 already), engine-bench on the
# 8B (1,024 / 512 / 256, 3 rounds) and the 1.7B (512 = default / 256), 8B batch-1 timelines.
# On an H200, the owed record rows too. Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s45_b 540
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
wait_for $W/m8 150 && EB_PREFILL=0 EB_MIN_LEFT=60 EB_BATCHES=1,8,32,64 ab_many nt8 $W/m8 3 \
  "t1024 VERBATIM_NORM_DECODE_THREADS=1024" "t512 VERBATIM_NORM_DECODE_THREADS=512" "t256 VERBATIM_NORM_DECODE_THREADS=256"
wait_for $W/m8r 90 && inv 8r_bf16_t128 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 \
  VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2 VERBATIM_NORM_DECODE_THREADS=128
wait_for $W/m17 60 && EB_PREFILL=0 EB_MIN_LEFT=60 ab_many nt17 $W/m17 2 \
  "t512 VERBATIM_NORM_DECODE_THREADS=512" "t256 VERBATIM_NORM_DECODE_THREADS=256"
trace_decode 8_b1_t1024 $W/m8 1 VERBATIM_NORM_DECODE_THREADS=1024
trace_decode 8_b1_t256 $W/m8 1 VERBATIM_NORM_DECODE_THREADS=256
if is_h200; then
  inv_of_record $W/m06
  EB_MIN_LEFT=30 EB_PREFILL=0 record_speed
fi
call_finish
