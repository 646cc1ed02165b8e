#!/usr/bin/env bash
# Session 18, call 6 (one H200, BUDGET s, default 230): the 8B digests of record (init std 0.005,
# 8 tokens) with qkv_post in half warps (ab0d386): bf16, then fp16 if the budget allows. Only the
# 8B folder is made (no 0.6B work, no second 8B folder).
# Pack: the s18_d pack (verbatim, cuda_ops_test, cuda_invariance_test of ab0d386's code).
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-230}
call_setup s18_e
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-8b $W/m8r 0.005
say "8B folder made"
inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
[ "$(left)" -gt 105 ] && inv 8r_fp16 $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=eba874a3a0dbd45c
call_finish
