#!/usr/bin/env bash
# Session 36, call b (one GPU, BUDGET s, default 560), adaptive. On an H200: s36_a's checks and
# figures of record (issue 4 asks for them on the H200; none came for a long call since session
# 31). On anything else: ncu's stall samples per SASS line of the 8B batch-1 glue kernels (the
# attention part kernel, the merge, add+RMSNorm from the o / down partials, qkv_post) and of the
# part kernel with the merge fused in (VERBATIM_ATTN_FUSED_MERGE=1, 7-16% slower a step in session
# 35: where does it lose?), for whoever takes the batch-1 glue up next.
# (As run in call b the H200 branch listed s36_a's steps inline; they are record_suite in common.sh
# now, the same steps.) Pack: as s36_a.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
if is_h200; then
  call_start s36_b 560
  record_suite
else
  call_start s36_b 400
  wait_for $W/m8 150
  # Skips: engine-bench's context prefill and warm-up come first; 40 launches in is a decode step.
  P="--batches 1 --context 1024 --steps 4 --prefill 0"
  ncu_prof attn_8_b1 attention_part_kernel 40 $W/m8 $P
  ncu_prof merge_8_b1 merge_kernel 40 $W/m8 $P
  ncu_prof norm_8_b1 add_rmsnorm_from_kernel 80 $W/m8 $P
  ncu_prof qkvpost_8_b1 qkv_post_kernel 40 $W/m8 $P
  VERBATIM_ATTN_FUSED_MERGE=1 ncu_prof attnfused_8_b1 attention_part_kernel 40 $W/m8 $P
fi
call_finish
