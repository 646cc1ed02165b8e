#!/usr/bin/env bash
# Session 46, call b (one GPU): the landed code (ff37815: s46_a's patch with the chunk loading
# shared as ChunkValues) checked again: the attention and sampler op tests, the 0.6B digests of
# record, and engine-bench on the 0.6B with --logprobs 20 at 1 and 8 sequences.
# Pack: verbatim + cuda_ops_test + cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start_06 s46_b 200
sampler_recheck_06
call_finish
