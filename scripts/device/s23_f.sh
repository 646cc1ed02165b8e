#!/usr/bin/env bash
# Session 23, call 6 (one H200, BUDGET s, default 300): the ring kernel as main would have it
# (folder warp; the variant by CTA count: 4 consumers x 5 stages while the CTAs fit one to an SM,
# else 2 x 2 at 2 CTAs per SM; on from 16 sequences). Bits: every op test, the 0.6B digests of
# record, the 8B bf16 / fp16 digests of record, the 64-user HTTP check. Speed: where the ring starts
# to win: 8B, 0.6B and 1.7B decode at 1 / 4 / 8 / 12 / 16 / 24 / 32 / 48 / 64 sequences with the
# ring off and on from 2 sequences.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s23_f 300
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
bits_06
wait_for $W/m8 100
export EB_MIN_LEFT=30 EB_PREFILL=0 EB_BATCHES=1,4,8,12,16,24,32,48,64
R=VERBATIM_ATTN_RING_MIN_BATCH
ab_many ring_8 $W/m8 1 "off $R=0" "on $R=2"
ab_many ring_06 $W/m06 1 "off $R=0" "on $R=2"
wait_for $W/m8r 60 && {
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
  inv 8r_fp16 $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=eba874a3a0dbd45c
}
[ "$(left)" -gt 80 ] && http_check $W/m06
wait_for $W/m17 40 && ab_many ring_17 $W/m17 1 "off $R=0" "on $R=2"
call_finish
