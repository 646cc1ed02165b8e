#!/usr/bin/env bash
# Session 20, call 1 (one H200, BUDGET s, default 420; ran on the first form: the items after the wait, the row by cp.async). qkv_post run inside the four-warp per-part
# attention kernel at decode (attention_with_qkv_post; graph steps of one row per sequence where
# that kernel runs: batch 1-2 at 1k context), and the split-K sums through one R-element template
# (docs/patches/s19-one-partials-sum.patch, applied). Bits: cuda_ops_test (new:
# AttentionWithQkvPostIsQkvPostThenAttention), the 0.6B and 8B digests of record (their graph
# decode steps now take the fused path). Speed: VERBATIM_ATTN_QKV_POST=0 (the separate launch)
# against 1, same binary, alternated, 8B and 0.6B at batch 1, 2, 8; ncu of two 8B decode steps.
# Needs docs/patches/s20-qkv-post-in-attention.patch applied (not on main; s20_a ran its first form).
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s20_a 420
mk qwen3-8b $W/m8r 0.005 &
bits_06
wait_for $W/m8 150
export EB_MIN_LEFT=60 EB_STEPS=32 EB_BATCHES=1,2,8 EB_PREFILL=0
ab_many 8 $W/m8 3 "sep VERBATIM_ATTN_QKV_POST=0" "fused VERBATIM_ATTN_QKV_POST=1"
ab_many 06 $W/m06 3 "sep VERBATIM_ATTN_QKV_POST=0" "fused VERBATIM_ATTN_QKV_POST=1"
ncu_steps 8_b1 $W/m8 1
wait_for $W/m8r 60 && {
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
  inv 8r_fp16 $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=eba874a3a0dbd45c
}
call_finish
