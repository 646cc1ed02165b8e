#!/usr/bin/env bash
# Session 23, call 4 (one H200, BUDGET s, default 300): the ring kernel's producers find each
# row's cache offset once a tile and pass it by shuffles (s23_c's ncu: the producers' per-copy
# slot arithmetic was the limit, consumers waited on their stages; polling waits lost to try_wait
# and are gone). Bits: the attention op tests (every variant), the 0.6B bf16 digest. Speed: 8B and
# 0.6B decode at 16 / 32 / 64 sequences, ring off and each variant from 2 sequences; ncu's full
# set of one ring kernel launch at 32 sequences.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s23_d 300
ops_attention
inv 06_bf16 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55
wait_for $W/m8 100
export EB_MIN_LEFT=30 EB_PREFILL=0 EB_BATCHES=16,32,64
R=VERBATIM_ATTN_RING_MIN_BATCH
V=VERBATIM_ATTN_RING_VARIANT
ab_many ring_8 $W/m8 1 "off $R=0" "v0 $R=2 $V=0" "v1 $R=2 $V=1" "v2 $R=2 $V=2" "v3 $R=2 $V=3"
ab_many ring_06 $W/m06 1 "off $R=0" "v0 $R=2 $V=0" "v2 $R=2 $V=2"
[ "$(left)" -gt 70 ] && ncu_prof ring8 "attention_ring" 8 $W/m8 --batches 32 --context 1024 --steps 2 --prefill 0 \
  --no-context-prefill
call_finish
