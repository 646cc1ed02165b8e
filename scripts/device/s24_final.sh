#!/usr/bin/env bash
# Session 24, figures of record (one H200, BUDGET s, default 330): main with the branch-free exp
# (s24_b: same bits, 8B -1.5% / -1.0% / -3.5% / -3.8% at 1 / 8 / 32 / 64 sequences, 0.6B -3 to -8%).
# Bits: cuda_ops_test (the exp / silu test as fixed after s24_b), the 0.6B digests of record, the
# 64-user HTTP check, the 8B bf16 digest of record. Speed: the decode figures of record (contract
# and fast, 1 / 8 / 32 / 64 sequences) for 0.6B, 8B (with its 2,048-token prefill, contract and
# fast) and 1.7B, and the 8B with the ring off in the same call.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s24_final 330
( mk qwen3-1.7b $W/m17 0.02; mk qwen3-8b $W/m8r 0.005 ) &
bits_06
http_check $W/m06
wait_for $W/m8 100
export EB_MIN_LEFT=30 EB_PREFILL=0
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
EB_PREFILL=2048 eb 8_contract $W/m8 contract
EB_PREFILL=2048 eb 8_fast $W/m8 fast
eb 8_noring $W/m8 contract VERBATIM_ATTN_RING_MIN_BATCH=0
wait_for $W/m17 60 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
wait_for $W/m8r 40 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
call_finish
