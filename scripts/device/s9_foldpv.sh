#!/usr/bin/env bash
# Session 9, call 6 (one H200, ~150 s): the prefill attention (fold kernel) folding each 16-column
# block of a tile's P·V into the output as it is summed (PV_FOLD: 168 registers instead of 253, 3
# CTAs per SM instead of 2; env VERBATIM_ATTN_FOLD_PV=0 goes back). Bits: cuda_ops_test (the fold
# kernel both ways against the decode paths and each other), the 0.6B digests of record (their
# prefills run the fold kernel), the 8B bf16 digest if time is left. Speed: engine-bench
# 2,048-token prefill VERBATIM_ATTN_FOLD_PV=0 against the default, alternated, two rounds on 8B,
# once on 0.6B.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s9_foldpv 170
mk qwen3-8b $W/m8r 0.005 &
bits_06
wait_for $W/m8 60
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=20
for r in 1 2; do
  eb 8_whole_r$r $W/m8 contract VERBATIM_ATTN_FOLD_PV=0
  eb 8_pvfold_r$r $W/m8 contract
done
eb 06_whole $W/m06 contract VERBATIM_ATTN_FOLD_PV=0
eb 06_pvfold $W/m06 contract
[ "$(left)" -gt 40 ] && wait_for $W/m8r 35 &&
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
call_finish
