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
ops_attention
short_record
trace_decode 06_b1 $W/m06 1
trace_decode 8_b1 $W/m8 1
[ "$(left)" -gt 60 ] && http_check $W/m06
call_finish
