#!/usr/bin/env bash
# Session 27 wrote this (one H200, BUDGET s, default 420): the ring kernel's transposed tiles
# (VERBATIM_ATTN_RING_TR=1: keys as the MMA's m, query rows as its n, on items of <= 8 rows;
# half the MMAs a tile). Bits, then speed:
# 1. the attention op tests (the ring kernel with and without transposed tiles against the tile
#    kernel + merge, every shape); `verbatim generate` of 48 prompts TR=1 against TR=0 on the 0.6B
#    (kv group 2) and the 8B (group 4); the invariance matrix on the 0.6B with TR=1 against the
#    digests of record (bf16, fp16);
# 2. ncu of the ring kernel at 16 / 32 / 64 sequences, TR=0 and TR=1; 8B decode at 8 / 32 / 64,
#    TR=0 and TR=1 alternated twice; ncu's stall samples per SASS line of the ring kernel at 32
#    sequences, both ways, as the budget allows.
# Pack: PACK_XZ=1 scripts/device/pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s27_a 420
printf '#!/bin/sh\nVERBATIM_ATTN_RING_TR=1 exec %s "$@"\n' "$VB" > $W/vb_tr && chmod +x $W/vb_tr
ops_attention
gen_same tr06 $W/vb_tr $W/m06
export EB_MIN_LEFT=40 EB_PREFILL=0 EB_BATCHES=8,32,64
wait_for $W/m8 150 && {
  gen_same tr8 $W/vb_tr $W/m8
  ncu_kernel ring_tr0 $VB $W/m8 16,32,64 attention_ring VERBATIM_ATTN_RING_TR=0
  ncu_kernel ring_tr1 $VB $W/m8 16,32,64 attention_ring VERBATIM_ATTN_RING_TR=1
  ab_vars tr8 $W/m8 2 tr0 VERBATIM_ATTN_RING_TR=0 tr1 VERBATIM_ATTN_RING_TR=1
}
inv 06_bf16_tr1 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_ATTN_RING_TR=1
[ "$(left)" -gt 100 ] && inv 06_fp16_tr1 $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=d4981a65b9914c52 VERBATIM_ATTN_RING_TR=1
for tr in 1 0; do
  [ "$(left)" -gt 60 ] || break
  export VERBATIM_ATTN_RING_TR=$tr
  ncu_prof prof_ring_tr$tr attention_ring 40 $W/m8 --batches 32 --context 1024 --steps 2 --prefill 0 --no-context-prefill
done
unset VERBATIM_ATTN_RING_TR
call_finish
