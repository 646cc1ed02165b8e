#!/usr/bin/env bash
# Session 40, call a (one GPU), for a device budget too short for record_suite: on an H200 only
# (elsewhere it prints the GPU and stops), the speed rows of record first (engine-bench contract /
# fast, 0.6B and 8B with its 2,048-token prefill, then 1.7B), then the 0.6B digests of record, the
# 8B bf16 digest and the HF peer as the budget (default 400 s) allows. Pack: verbatim + the three
# CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
if ! is_h200; then
  echo "not an H200: $(gpu_facts)"
  exit 0
fi
call_start s40_a 400
( mk qwen3-1.7b $W/m17 0.02; mk qwen3-8b $W/m8r 0.005 ) &
export EB_MIN_LEFT=30 EB_PREFILL=0
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
wait_for $W/m8 150 && {
  EB_PREFILL=2048 eb 8_contract $W/m8 contract
  EB_PREFILL=2048 eb 8_fast $W/m8 fast
}
wait_for $W/m17 30 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
inv_of_record $W/m06
wait_for $W/m8r 60 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
[ "$(left)" -gt 150 ] && hf_peer 8 $W/m8 4 100
call_finish
