#!/usr/bin/env bash
# Session 38, call e (one GPU, BUDGET s, default 320): a short record on an H200 only, for a
# session's last ~400 s of device time (s36_g plus the batch-1 timelines and the 64-user HTTP check
# as the budget allows). Elsewhere only the GPU line. Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
if ! is_h200; then
  echo "not an H200: $(gpu_facts)"
  exit 0
fi
call_start s38_e 320
mk qwen3-8b $W/m8r 0.005 &
ops_attention
inv_of_record $W/m06
wait_for $W/m8 60
EB_MIN_LEFT=30 EB_PREFILL=0 record_speed
wait_for $W/m8r 40 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
trace_decode 06_b1 $W/m06 1
trace_decode 8_b1 $W/m8 1
[ "$(left)" -gt 60 ] && http_check $W/m06
call_finish
