#!/usr/bin/env bash
# Session 37, call b (one GPU), adaptive, on the split kernel's default (VERBATIM_ATTN_SPLIT_KEYS
# 1). On an H200: record_suite (BUDGET 560). Elsewhere (BUDGET 300): the checks of record on the
# final binary (attention op tests, the 0.6B digests, the 8B bf16 one, the 64-user HTTP check,
# the model tests) and its speed rows; then whether the split kernel also wins past batch 1, where
# the CTAs do not fit 2 per SM and main takes the one-warp tile kernel: forced four-warp split
# CTAs (VERBATIM_ATTN_SMALL_WARPS=4) against the default at 2 / 4 sequences, 3 rounds alternated;
# and the kernels' registers. Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
if is_h200; then
  call_start s37_b 560
  record_suite
  attention_regs
else
  call_start s37_b 300
  ( mk qwen3-8b $W/m8r 0.005 ) &
  ops_attention
  inv_of_record $W/m06
  export EB_MIN_LEFT=20
  EB_PREFILL=0 EB_BATCHES=2,4 ab_many w4_06 $W/m06 3 "main" "split4 VERBATIM_ATTN_SMALL_WARPS=4"
  wait_for $W/m8 60
  record_speed
  EB_PREFILL=0 EB_BATCHES=2,4 ab_many w4_8 $W/m8 3 "main" "split4 VERBATIM_ATTN_SMALL_WARPS=4"
  wait_for $W/m8r 40 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
  [ "$(left)" -gt 60 ] && http_check $W/m06
  attention_regs
  model_parity 60
fi
call_finish
