#!/usr/bin/env bash
# Session 18, call 5 (one H200, BUDGET s, default 200). qkv_post's many-token kernel with two
# items per warp (half warps, head_dim <= 128; VERBATIM_QKV_POST_HALF=0: one item per warp): the
# same operations per element, the norm's 16 lanes and tree within the half. Bits: cuda_ops_test
# (fused against unfused at 300 tokens, head_dim 64 / 128 / 256) and the 0.6B digests of record.
# Speed: 8B prefill 2,048 half / whole warps alternated three times, 0.6B twice; then the
# per-kernel durations of one 8B prefill.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s18_d 200
run_test cuda_ops_test 100
inv_of_record $W/m06
wait_for $W/m8 80
V=("whole VERBATIM_QKV_POST_HALF=0" "half")
EB_MIN_LEFT=50 EB_BATCHES=1 EB_STEPS=4 ab_many h8 $W/m8 3 "${V[@]}"
EB_MIN_LEFT=50 EB_BATCHES=1 EB_STEPS=4 ab_many h06 $W/m06 2 "${V[@]}"
ncu_prefill $W/m8
call_finish
