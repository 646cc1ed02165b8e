#!/usr/bin/env bash
# Session 21, call 7 (one H200, BUDGET s, default 150). PDL on steps of up to 64 rows against 16
# (s21_e's one round: 0.5-3.4% faster at 32 / 64 rows), alternated 2 rounds on 8B and 0.6B; then
# the 0.6B bf16 digest of record with the limit at 64 (the matrix runs batches 1-64).
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s21_f 150
export EB_MIN_LEFT=20 EB_PREFILL=0 EB_BATCHES=32,64
wait_for $W/m8 100
for r in 1 2; do
  eb 06_pdl16_r$r $W/m06 contract
  eb 06_pdl64_r$r $W/m06 contract VERBATIM_PDL_MAX_ROWS=64
  eb 8_pdl16_r$r $W/m8 contract
  eb 8_pdl64_r$r $W/m8 contract VERBATIM_PDL_MAX_ROWS=64
done
inv 06_bf16_pdl64 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_PDL_MAX_ROWS=64
call_finish
