#!/usr/bin/env bash
# Session 23, call 1 (one H200, BUDGET s, default 420): the ring attention kernel (whole decode
# rows of <= 16 rows in one CTA: producer warps stream the tiles through a ring of stages, consumer
# warps compute them in turn and fold their states in tile order in shared memory; no states
# through memory, no merge launch). Bits: op tests (ring against the tile kernel + merge), the 0.6B
# digests of record (ring on from 17 sequences), the 8B bf16 digest of record. Speed: the 8B and
# 0.6B decode with the ring off / from 2 sequences in each variant (4x4, 4x6, 2x2 at 2 CTAs/SM,
# 8x6); ncu per-kernel durations of one 8B step at 32 sequences with the default.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s23_a 420
( mk qwen3-8b $W/m8r 0.005 ) &
bits_06
wait_for $W/m8 100
export EB_MIN_LEFT=30 EB_PREFILL=0
R=VERBATIM_ATTN_RING_MIN_BATCH
V=VERBATIM_ATTN_RING_VARIANT
ab_many ring_8 $W/m8 1 "off $R=0" "v0 $R=2 $V=0" "v1 $R=2 $V=1" "v2 $R=2 $V=2" "v3 $R=2 $V=3"
ab_many ring_06 $W/m06 1 "off $R=0" "v0 $R=2 $V=0" "v2 $R=2 $V=2"
[ "$(left)" -gt 100 ] && ncu_steps 8_b32 $W/m8 32
wait_for $W/m8r 40 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
call_finish
