#!/usr/bin/env bash
# Session 21, call 6 (one H200, BUDGET s, default 230). PDL on steps of up to 16 rows by default
# (was 4; s21_d: 8B -1.7-1.9%, 0.6B -6-7% at 8 / 16 rows). Bits: the 0.6B digests of record (the
# matrix runs batches 1-64). Speed: PDL limit 16 against 64 at 32 / 64 rows; the decode figures of
# record again (contract and fast, batch 1 / 8 / 32 / 64, no prefill) for 0.6B, 8B, 1.7B; the
# 64-user HTTP check.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s21_e 230
( mk qwen3-1.7b $W/m17 0.02 ) &
inv_of_record $W/m06
wait_for $W/m8 100
export EB_MIN_LEFT=20 EB_PREFILL=0
EB_BATCHES=32,64 eb 06_pdl16 $W/m06 contract
EB_BATCHES=32,64 eb 06_pdl64 $W/m06 contract VERBATIM_PDL_MAX_ROWS=64
EB_BATCHES=32,64 eb 8_pdl16 $W/m8 contract
EB_BATCHES=32,64 eb 8_pdl64 $W/m8 contract VERBATIM_PDL_MAX_ROWS=64
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
eb 8_contract $W/m8 contract
eb 8_fast $W/m8 fast
wait_for $W/m17 30 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
[ "$(left)" -gt 60 ] && http_check $W/m06
call_finish
