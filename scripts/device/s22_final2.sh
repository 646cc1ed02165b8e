#!/usr/bin/env bash
# Session 22, call 7 (one H200, BUDGET s, default 300): main's final code (577419a: the split-W
# SiLU epilogue on the 0.6B, the stream kernel's segment loop) after s22_final (4c3bd3d). Bits: op
# tests, the 0.6B digests and the 8B bf16 digest of record, the 64-user HTTP check. Speed: the
# decode figures (contract and fast, no prefill: its code is unchanged) for 0.6B, 8B, 1.7B.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s22_final2 300
( mk qwen3-1.7b $W/m17 0.02; mk qwen3-8b $W/m8r 0.005 ) &
bits_06
wait_for $W/m8 100
export EB_MIN_LEFT=30 EB_PREFILL=0
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
eb 8_contract $W/m8 contract
eb 8_fast $W/m8 fast
wait_for $W/m17 60 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
[ "$(left)" -gt 80 ] && http_check $W/m06
wait_for $W/m8r 40 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
call_finish
