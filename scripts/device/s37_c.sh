#!/usr/bin/env bash
# Session 37, call c (one GPU, BUDGET s, default 260), the final binary (split kernel up to 5
# four-warp CTAs an SM): attention op tests, the 0.6B digests of record (the matrix runs batches
# 2..64, so the split kernel's 2-4 sequences too), then the final default against the old path
# (VERBATIM_ATTN_SPLIT_KEYS=0: the four-warp per-part kernel up to 2 CTAs an SM, else the tile
# kernel) at 1 / 2 / 3 / 4 / 6 sequences, 3 rounds alternated, the 0.6B and the 8B; the speed
# rows (contract and fast) and the 8B bf16 digest as the budget allows. Any card (on an H200 the
# A/B and rows are the H200's). Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s37_c 260
mk qwen3-8b $W/m8r 0.005 &
ops_attention
inv_of_record $W/m06
export EB_MIN_LEFT=20
EB_PREFILL=0 EB_BATCHES=1,2,3,4,6 ab_many fin_06 $W/m06 3 "final" "old VERBATIM_ATTN_SPLIT_KEYS=0"
wait_for $W/m8 40
EB_PREFILL=0 EB_BATCHES=1,2,3,4,6 ab_many fin_8 $W/m8 3 "final" "old VERBATIM_ATTN_SPLIT_KEYS=0"
wait_for $W/m8r 40 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
EB_MIN_LEFT=30 EB_PREFILL=0 record_speed
call_finish
