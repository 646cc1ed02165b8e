#!/usr/bin/env bash
# Session 20, call 2 (one H200, BUDGET s, default 300). The second form of qkv_post inside the
# per-part attention kernel (s20_a: the first form was slower, 8B b1 +1.6%, 0.6B +4.5%; ncu 16.6 us
# against 9.3 + 4.1): the tile's copies and the items' step inputs / weights read before the PDL
# wait (the positions below each decode row's own are earlier steps' writes), the row's own K / V
# written into the tile by the k / v items (no copy back from the cache). Bits: cuda_ops_test, the
# 0.6B digests of record. Speed: VERBATIM_ATTN_QKV_POST=0 against 1 (same binary), 8B and 0.6B at
# batch 1 and 2; ncu of two 8B decode steps at batch 1.
# Needs docs/patches/s20-qkv-post-in-attention.patch applied (not on main; s20_a ran its first form).
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s20_b 300
bits_06
wait_for $W/m8 150
export EB_MIN_LEFT=40 EB_STEPS=32 EB_BATCHES=1,2 EB_PREFILL=0
ab_many 8 $W/m8 3 "sep VERBATIM_ATTN_QKV_POST=0" "fused VERBATIM_ATTN_QKV_POST=1"
ab_many 06 $W/m06 3 "sep VERBATIM_ATTN_QKV_POST=0" "fused VERBATIM_ATTN_QKV_POST=1"
ncu_steps 8_b1 $W/m8 1
call_finish
