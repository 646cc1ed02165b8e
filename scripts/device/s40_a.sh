#!/usr/bin/env bash
# Session 40, call a (one GPU), for a device budget too short for record_suite: on an H200 only
# (elsewhere it prints the GPU and stops), short_record (the 0.6B digests of record, the speed rows
# of the 0.6B and 8B, contract and fast, the 8B prefill, the 8B bf16 digest), then the 1.7B rows
# and the HF peer as the budget (default 400 s) allows. Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
if ! is_h200; then
  echo "not an H200: $(gpu_facts)"
  exit 0
fi
call_start s40_a 400
mk qwen3-1.7b $W/m17 0.02 &
short_record
export EB_MIN_LEFT=30 EB_PREFILL=0
wait_for $W/m17 30 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
[ "$(left)" -gt 150 ] && hf_peer 8 $W/m8 4 100
call_finish
