#!/usr/bin/env bash
# Session 23, final call (one H200, BUDGET s, default 300): main with the ring attention kernel on
# from 8 sequences where its CTAs fill the waves (attention_ring_pays), its shape by CTA count.
# Bits: the 0.6B digests of record, the 64-user HTTP check (batches past 8 now take the ring), the
# 8B bf16 digest of record; the op tests passed on this kernel in s23_f (only the host's choice
# changed since). Speed: the decode figures of record (contract and fast, 1 / 8 / 32 / 64
# sequences, no prefill: its code is unchanged since s22_final) for 0.6B, 8B and 1.7B, the 8B
# contract also at 16 / 24 / 48, and the 8B with the ring off in the same call.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s23_final 300
( mk qwen3-1.7b $W/m17 0.02; mk qwen3-8b $W/m8r 0.005 ) &
inv_of_record $W/m06
http_check $W/m06
wait_for $W/m8 100
export EB_MIN_LEFT=30 EB_PREFILL=0
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
EB_BATCHES=1,8,16,24,32,48,64 eb 8_contract $W/m8 contract
eb 8_fast $W/m8 fast
eb 8_noring $W/m8 contract VERBATIM_ATTN_RING_MIN_BATCH=0
wait_for $W/m17 60 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
wait_for $W/m8r 40 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
call_finish
