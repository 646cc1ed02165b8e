#!/usr/bin/env bash
# Session 38, call b (one GPU), adaptive: the build with the attention launch tally
# (cuda::attention_launches; the op tests now assert which attention kernel ran) on top of s37-tidy.
# First the attention op tests. On an H200 (BUDGET 575): record_suite (its digests and model
# tests, the speed rows, the timelines; the whole cuda_ops_test last as the budget allows).
# Elsewhere (BUDGET 240): the whole cuda_ops_test and the 0.6B digests of record.
# Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
if is_h200; then
  call_start s38_b 575
  ops_attention
  record_suite
else
  call_start_06 s38_b 240
  ops_attention
  run_test cuda_ops_test 150
  inv_of_record $W/m06
fi
call_finish
