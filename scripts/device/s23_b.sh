#!/usr/bin/env bash
# Session 23, call 2 (one H200, BUDGET s, default 330): the ring kernel with cp.async producers
# (s23_a's one-row bulk copies were the limit) and CW <= S (s23_a's 8 x 6 variant hung: a consumer
# ran a ring ahead of its stage). Bits: the attention op tests first, then all; the 0.6B digests of
# record (ring from 17 sequences). Speed: 8B and 0.6B decode at 8 / 16 / 24 / 32 / 64 sequences,
# ring off / from 2 sequences in each variant (4x4, 4x6, 2x2 at 2 CTAs/SM, 6x6); ncu per-kernel
# durations of one 8B step at 32 sequences.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s23_b 330
ops_attention
wait_for $W/m8 100
export EB_MIN_LEFT=30 EB_PREFILL=0 EB_BATCHES=8,16,24,32,64
R=VERBATIM_ATTN_RING_MIN_BATCH
V=VERBATIM_ATTN_RING_VARIANT
ab_many ring_8 $W/m8 1 "off $R=0" "v0 $R=2 $V=0" "v1 $R=2 $V=1" "v2 $R=2 $V=2" "v3 $R=2 $V=3"
ab_many ring_06 $W/m06 1 "off $R=0" "v0 $R=2 $V=0" "v1 $R=2 $V=1" "v2 $R=2 $V=2" "v3 $R=2 $V=3"
run_test cuda_ops_test 100
inv_of_record $W/m06
[ "$(left)" -gt 60 ] && ncu_steps 8_b32 $W/m8 32
call_finish
