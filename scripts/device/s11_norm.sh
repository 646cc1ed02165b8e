#!/usr/bin/env bash
# Session 11, call 5 (one H200, ~200 s): add_rmsnorm_from on 256-thread row blocks where a launch
# has >= 64 rows (prefill; VERBATIM_NORM_MANY_ROWS_THREADS, default 256) against the 1,024 of every
# launch before (=0), in one binary. Bits: cuda_ops_test (the 65-row case against the CPU
# reference), the 0.6B digests and the 8B bf16 digest on the new default. Speed: engine-bench
# 2,048-token prefill alternated (two rounds on 8B, one on 0.6B), per-kernel durations of one 8B
# prefill. Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s11_norm 230
mk qwen3-8b $W/m8r 0.005 &
bits_06
wait_for $W/m8 150
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30
ab_vars 8p $W/m8 2 n1024 VERBATIM_NORM_MANY_ROWS_THREADS=0 n256 ""
ab_vars 06p $W/m06 1 n1024 VERBATIM_NORM_MANY_ROWS_THREADS=0 n256 ""
wait_for $W/m8r 60 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
ncu_prefill $W/m8
call_finish
