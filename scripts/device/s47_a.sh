#!/usr/bin/env bash
# Session 47, call a (one GPU): first s46_b's re-check of the landed sampler form (ChunkValues):
# the attention and sampler op tests, the 0.6B digests of record, engine-bench on the 0.6B with
# --logprobs 20. Then, on an H200, the owed short record (0.6B and 8B rows contract and fast, the
# 8B prefill, the 8B bf16 digest); on any other card, an ncu profile (full set) of one stats_kernel
# launch on the 0.6B at batch 1, the lead for its ~18 us.
# Pack: verbatim + cuda_ops_test + cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s47_a 540
sampler_recheck_06
if is_h200; then
  mk qwen3-8b $W/m8r 0.005 &
  EB_MIN_LEFT=30 EB_PREFILL=0 record_speed
  wait_for $W/m8r 40 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
else
  ncu_prof stats06 'stats_kernel' 2 $W/m06 --batches 1 --context 1024 --steps 2 --prefill 0 --no-context-prefill
  EB_PREFILL=0 EB_MIN_LEFT=30 eb 06_contract $W/m06 contract
fi
call_finish
