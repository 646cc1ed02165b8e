#!/usr/bin/env bash
# Session 46, call b (one GPU): the landed code (ff37815: s46_a's patch with the chunk loading
# shared as ChunkValues) checked again: the attention and sampler op tests, the 0.6B digests of
# record, and engine-bench on the 0.6B with --logprobs 20 at 1 and 8 sequences.
# Pack: verbatim + cuda_ops_test + cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start_06 s46_b 200
ops_attention
timeout 60 "$VB_BIN/cuda_ops_test" --gtest_filter='CudaSampler*' > $OUT/ops_sampler.log 2>&1
say "sampler op tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/ops_sampler.log | tr '\n' ' ')"
inv_of_record $W/m06
EB_PREFILL=0 EB_MIN_LEFT=30 EB_BATCHES=1,8 EB_ARGS="--logprobs 20" eb lp20_06 $W/m06 contract
call_finish
