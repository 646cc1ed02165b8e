#!/usr/bin/env bash
# Session 19, call 1 (one H200, BUDGET s, default 330). The split-K partials of o / down / qkv are
# loaded all at once before their fixed-order adds (sum_parts_n, fused.cu; before: split 8's seven
# loads each behind a branch on the add before it). Bits: cuda_ops_test, the 0.6B digests of record
# and the 8B digests of record (init std 0.005, 8 tokens). Speed: engine-bench contract of the
# binary before the change (verbatim_base, HEAD d51315b) against the new one, alternated three times
# on 8B and on 0.6B (batch 1/8/32/64 and the 2,048-token prefill); then the per-kernel durations of
# two 8B decode steps at batch 1 with the new binary.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test, plus the base
# binary as .carry/bin/verbatim_base.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s19_a 330
mk qwen3-8b $W/m8r 0.005 &
bits_06
wait_for $W/m8 150
export EB_MIN_LEFT=60 EB_STEPS=24
ab_eb $VB_BIN/verbatim_base base 8 $W/m8 3
ab_eb $VB_BIN/verbatim_base base 06 $W/m06 2
ncu_steps 8_b1 $W/m8 1
wait_for $W/m8r 60 && {
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
  inv 8r_fp16 $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=eba874a3a0dbd45c
}
call_finish
