#!/usr/bin/env bash
# Session 14, call 1 (one H200, ~420 s). The natural-sets patch (docs/patches/s13-natural-sets.patch)
# plus (1) v1 load modes (VERBATIM_GEMM_V1_LOADS: bit 0 W by two 8-byte loads, no trade; bit 1 x by
# one 16-byte load traded in the quad) and unroll 8 at <= 16 rows, against main (e7115a5's code,
# carried as verbatim_main): which restores main's decode speed? (2) the wgmma kernel's K loop on
# per-stage full / empty barriers (VERBATIM_GEMM_WGMMA_RING 1: the same stages; 2: 8 one-chunk
# stages) against the CTA barrier a stage (0). Bits: cuda_ops_test (every mode against v1); the
# 0.6B bf16 matrix against the patch's digest. Then per-kernel durations of decode steps.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test, plus verbatim_main.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s14_loads 420
run_test cuda_ops_test 120
inv 06_bf16 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55
gemm_2048 "" tiled,tiled:ring1,tiled:ring2,cublas
wait_for $W/m8 120
export EB_STEPS=16 EB_MIN_LEFT=60
NEW=$VB MAIN=$VB_BIN/verbatim_main
# Prefill: the K loop's three forms, two rounds (decode does not run the wgmma kernel).
for r in 1 2; do
  for g in 0 1 2; do EB_BATCHES=1 EB_STEPS=2 eb 8p_ring${g}_r$r $W/m8 contract VERBATIM_GEMM_WGMMA_RING=$g; done
done
variants=("L0 VERBATIM_GEMM_V1_LOADS=0" "L1 VERBATIM_GEMM_V1_LOADS=1" "L2 VERBATIM_GEMM_V1_LOADS=2"
          "L3 VERBATIM_GEMM_V1_LOADS=3" "L1u8 VERBATIM_GEMM_V1_LOADS=1 VERBATIM_GEMM_V1_UNROLL16=8"
          "L3u8 VERBATIM_GEMM_V1_LOADS=3 VERBATIM_GEMM_V1_UNROLL16=8")
export EB_PREFILL=0
for r in 1 2; do
  VB=$MAIN eb 8_main_r$r $W/m8 contract
  for v in "${variants[@]}"; do w=($v); eb 8_${w[0]}_r$r $W/m8 contract "${w[@]:1}"; done
done
VB=$MAIN eb 06_main $W/m06 contract
for v in "${variants[@]}"; do w=($v); eb 06_${w[0]} $W/m06 contract "${w[@]:1}"; done
[ "$(left)" -gt 100 ] && { VB=$MAIN ncu_steps 8_b32_main $W/m8 32; }
[ "$(left)" -gt 70 ] && { export VERBATIM_GEMM_V1_LOADS=3; ncu_steps 8_b32_L3 $W/m8 32; unset VERBATIM_GEMM_V1_LOADS; }
[ "$(left)" -gt 40 ] && { export VERBATIM_GEMM_V1_LOADS=1; ncu_steps 8_b1_L1 $W/m8 1; unset VERBATIM_GEMM_V1_LOADS; }
call_finish
