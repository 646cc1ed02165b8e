#!/usr/bin/env bash
# Session 8, call 5 (one H200, ~150 s): SiLU·mul in the gate_up GEMM's epilogue (unsplit W, <= 64
# rows: the 8B), and the v1 L2 prefetch limited to weights of <= 16 MiB. Bits: cuda_ops_test (the
# epilogue against gemm + silu_mul at 1..64 rows), the 0.6B digests of record. Speed: engine-bench
# decode, VERBATIM_GEMM_SILU=0 (separate kernel) against the default, alternated, two rounds on
# 8B; the 0.6B once; v1 with 8 chunks per load round at <= 16 rows on 8B (information).
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s8_silu 200
bits_06
wait_for $W/m8 100
export EB_PREFILL=0 EB_STEPS=24 EB_MIN_LEFT=15
for r in 1 2; do
  eb 8_nosilu_r$r $W/m8 contract VERBATIM_GEMM_SILU=0
  eb 8_silu_r$r $W/m8 contract
done
eb 06_new $W/m06 contract
EB_BATCHES=1 eb 8_u8 $W/m8 contract VERBATIM_GEMM_V1_UNROLL16=8
call_finish
