#!/usr/bin/env bash
# Session 8, call 1 (one H200, ~250 s): the merge fused into the attention kernels (the last CTA
# of an item folds its multi-part rows). Bits: cuda_ops_test (fused vs merge kernel at block
# sizes 16/7/1, one- and four-warp kernels, the tile kernel, multi-token items), the 0.6B and 8B
# digests of record, cuda_model_test. Speed: engine-bench decode with VERBATIM_ATTN_FUSED_MERGE=0
# (the merge kernel) against the default (fused), alternated, two rounds on 8B, one on 0.6B; an
# 8B batch-1 step's per-kernel times. QUICK=1 skips the 8B digests and cuda_model_test (call 2:
# one atomic with release/acquire per CTA instead of a fence in every thread).
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-300}
call_setup s8_merge
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
( mk qwen3-8b $W/m8 0.02; [ -z "$QUICK" ] && mk qwen3-8b $W/m8r 0.005 ) &
run_test cuda_ops_test 100
inv_of_record $W/m06
wait_for $W/m8 100
export EB_PREFILL=0 EB_STEPS=24
for r in 1 2; do
  eb 8_kernel_r$r $W/m8 contract VERBATIM_ATTN_FUSED_MERGE=0
  eb 8_fused_r$r $W/m8 contract
done
eb 06_kernel $W/m06 contract VERBATIM_ATTN_FUSED_MERGE=0
eb 06_fused $W/m06 contract
[ -z "$QUICK" ] && wait_for $W/m8r 60 && {
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
  inv 8r_fp16 $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=7e58f529cd75d598
}
[ -z "$QUICK" ] && [ "$(left)" -gt 80 ] && run_test cuda_model_test 70
[ "$(left)" -gt 30 ] && ncu_steps 8_b1 $W/m8 1
call_finish
