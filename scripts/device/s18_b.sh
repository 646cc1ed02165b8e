#!/usr/bin/env bash
# Session 18, call 2 (one H200, BUDGET s, default 240). The prefill fold kernel's CTAs heavy first
# (VERBATIM_ATTN_FOLD_ORDER=1, now the default: every kv head of the launch's last item first, a
# one-dimensional grid) against plan order (=0). Scheduling only: cuda_ops_test and the 0.6B
# digests of record. Speed: 8B and 0.6B prefill 2,048 (decode at 32 alongside), alternated; then
# the per-kernel durations of one 8B prefill (qkv_post's many-token kernel and the fold kernel).
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s18_b 240
run_test cuda_ops_test 100
inv 06_bf16 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55
wait_for $W/m8 100
export EB_MIN_LEFT=50 EB_BATCHES=32 EB_STEPS=8
V=("plan VERBATIM_ATTN_FOLD_ORDER=0" "heavy")
ab_many o8 $W/m8 3 "${V[@]}"
ab_many o06 $W/m06 2 "${V[@]}"
ncu_prefill $W/m8
call_finish
