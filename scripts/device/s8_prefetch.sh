#!/usr/bin/env bash
# Session 8, call 4 (one H200, ~200 s): v1 GEMMs prefetching the first bytes of each W row
# segment into L2 before griddepcontrol.wait (VERBATIM_GEMM_V1_PREFETCH bytes; PDL steps only,
# <= 4 rows). Bits: cuda_ops_test, the 0.6B digests of record. Speed: engine-bench decode at
# batch 1 and 4, prefetch 0 / 512 / 1024 / 2048 alternated in one binary, two rounds on 8B, one
# on 0.6B.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s8_prefetch 260
bits_06
wait_for $W/m8 100
export EB_PREFILL=0 EB_STEPS=32 EB_BATCHES=1,4 EB_MIN_LEFT=20
for r in 1 2; do
  for p in 0 512 1024 2048; do eb 8_pf${p}_r$r $W/m8 contract VERBATIM_GEMM_V1_PREFETCH=$p; done
done
for p in 0 512 1024 2048; do eb 06_pf$p $W/m06 contract VERBATIM_GEMM_V1_PREFETCH=$p; done
call_finish
