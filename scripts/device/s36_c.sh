#!/usr/bin/env bash
# Session 36, call c (one GPU), adaptive. On an H200: record_suite (BUDGET 560). Elsewhere (BUDGET
# 200): batch-1 attention with the one-warp tile kernel (VERBATIM_ATTN_SMALL_WARPS=1: K in
# registers, V by bulk copies, block ids before the PDL wait; last measured at batch 1 in session
# 17 with a spilling build) against main's four-warp per-part kernel, whose warps 1-3 only wait
# at batch 1 (s36_b's ncu), 3 rounds alternated at 1 / 4 sequences on the 0.6B and the 8B. Same
# bits either way (cuda_ops_test AttentionMergeOfManyPartsIsTheFold). Pack: as s36_a.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
if is_h200; then
  call_start s36_c 560
  record_suite
else
  call_start s36_c 200
  export EB_PREFILL=0 EB_BATCHES=1,4 EB_MIN_LEFT=20
  ab_many tile_06 $W/m06 3 "main" "tile VERBATIM_ATTN_SMALL_WARPS=1"
  wait_for $W/m8 60 && ab_many tile_8 $W/m8 3 "main" "tile VERBATIM_ATTN_SMALL_WARPS=1"
fi
call_finish
