#!/usr/bin/env bash
# Session 21, call 5 (one H200, BUDGET s, default 300). The SiLU epilogue shared by v1 and the
# stream kernel (gemm_common.cuh silu_gate_to_smem / silu_up_store; a refactor, same arithmetic):
# cuda_ops_test, the 0.6B digests and the 8B bf16 digest of record (gate_up's epilogue on the 8B
# shape). PDL at 8 and 16 rows (VERBATIM_PDL_MAX_ROWS) with the stream kernel, 8B and 0.6B.
# Then where a decode step's time goes now: ncu of two 8B steps at batch 1 and at 32.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s21_d 300
( mk qwen3-8b $W/m8r 0.005 ) &
bits_06
wait_for $W/m8 100
export EB_MIN_LEFT=30 EB_PREFILL=0
eb 8_contract $W/m8 contract
# PDL past 4 rows with the stream kernel (sessions 7 and 21 call 1: 0.6B faster, 8B slower at 8 rows).
for r in 1 2; do
  for m in 06 8; do
    EB_BATCHES=8,16 eb ${m}_pdl4_r$r $W/m$m contract
    EB_BATCHES=8,16 eb ${m}_pdl16_r$r $W/m$m contract VERBATIM_PDL_MAX_ROWS=16
  done
done
ncu_steps 8_b1 $W/m8 1
ncu_steps 8_b32 $W/m8 32
wait_for $W/m8r 60 &&
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
call_finish
