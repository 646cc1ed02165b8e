#!/usr/bin/env bash
# Session 24 wrote this for the next session with a GPU (none was lent in session 24) (one H200,
# BUDGET s, default 330): the branch-free exp_f32 (common.cuh, the CPU recipe's form: the
# polynomial always runs, the special values are selected) against the branchy one before it.
# Bits: cuda_ops_test (its CudaExp test holds exp and silu to the CPU on all 2^32 floats), the 0.6B
# digests of record, the 8B bf16 digest of record. Speed, the old binary (verbatim_base, built from
# e2249f3) against the new, alternated: 8B decode 1 / 8 / 32 / 64 and its 2,048-token prefill (the
# fold kernel's exps), 2 rounds; 0.6B decode; then ncu of the ring kernel, old and new, at 16 / 32 /
# 64 sequences; the new ring shape 5 x 5 (variant 4) against auto at 8B 16 / 32 / 48 / 64.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test \
#   /tmp/base/build-cuda/verbatim=verbatim_base
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s24_b 330
mk qwen3-8b $W/m8r 0.005 &
bits_06
wait_for $W/m8 100
export EB_MIN_LEFT=40
ab_eb $VB_BIN/verbatim_base base exp_8 $W/m8 2
EB_PREFILL=0 ab_eb $VB_BIN/verbatim_base base exp_06 $W/m06 1
EB_PREFILL=0 EB_BATCHES=16,32,48,64 ab_many ring_8 $W/m8 1 "auto" "v4 VERBATIM_ATTN_RING_VARIANT=4"
ncu_kernel ring_base $VB_BIN/verbatim_base $W/m8 16,32,64 attention_ring
ncu_kernel ring_new $VB $W/m8 16,32,64 attention_ring
wait_for $W/m8r 30 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
call_finish
