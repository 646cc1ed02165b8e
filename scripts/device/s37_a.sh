#!/usr/bin/env bash
# Session 37, call a (one GPU, BUDGET s, default 420; any card): batch-1 attention with the tile's
# work split over the four-warp CTA's warps (VERBATIM_ATTN_SPLIT_KEYS=1, attention_split_kernel)
# and the merge with a warp per 32 dims of a row (VERBATIM_ATTN_MERGE_SLICED=1), against main's
# per-part kernel (warp 0 computes, warps 1-3 wait) and warp-a-row merge. Bits first: the
# attention op tests (both switches against the fold's bits, every head dim), the 0.6B digests of
# record and the 8B bf16 one with both on. Then 3 rounds alternated at 1 / 2 sequences on the
# 0.6B and the 8B, and the 0.6B batch-1 timeline with each. Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s37_a 420
( mk qwen3-8b $W/m8r 0.005 ) &
NEW="VERBATIM_ATTN_SPLIT_KEYS=1 VERBATIM_ATTN_MERGE_SLICED=1"
ops_attention
inv 06_bf16_new $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 $NEW
inv 06_fp16_new $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=d4981a65b9914c52 $NEW
export EB_PREFILL=0 EB_BATCHES=1,2 EB_MIN_LEFT=20
ab_many split_06 $W/m06 3 "main" "split VERBATIM_ATTN_SPLIT_KEYS=1" "sliced VERBATIM_ATTN_MERGE_SLICED=1" "both $NEW"
trace_decode 06_b1_main $W/m06 1
trace_decode 06_b1_both $W/m06 1 $NEW
wait_for $W/m8 60 && ab_many split_8 $W/m8 3 "main" "split VERBATIM_ATTN_SPLIT_KEYS=1" "sliced VERBATIM_ATTN_MERGE_SLICED=1" "both $NEW"
wait_for $W/m8r 40 && inv 8r_bf16_new $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2 $NEW
command -v cuobjdump > /dev/null && cuobjdump --dump-resource-usage "$VB" 2>/dev/null |
  grep -A1 -E "attention_split_kernel|merge_sliced_kernel|attention_part_kernel" | grep -E "REG" | head -12 > $OUT/regs.txt
call_finish
