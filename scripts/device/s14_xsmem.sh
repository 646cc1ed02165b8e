#!/usr/bin/env bash
# Session 14, call 5 (one H200, ~150 s), with docs/patches/s14-natural-sets.patch applied plus v1
# load mode 4 (VERBATIM_GEMM_V1_LOADS=4): at 17-64 rows the CTA's x tile goes through shared memory
# once (its 4 warps read the same rows) and ldmatrix hands each lane its words (96 registers at 32
# and 64 rows, against 146 / 168). Bits: cuda_ops_test (mode 4 against v1 at every M; gate_up's
# SiLU epilogue at 17 and 32 rows), the 0.6B bf16 matrix under mode 4 against the natural sets'
# digest. Speed: 8B and 0.6B decode, main (verbatim_main) against modes 2 and 4.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test, plus verbatim_main.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s14_xsmem 150
run_test cuda_ops_test 100
inv 06_bf16_x4 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_GEMM_V1_LOADS=4
export EB_STEPS=16 EB_MIN_LEFT=10 EB_PREFILL=0
MAIN=$VB_BIN/verbatim_main
VB=$MAIN eb 06_main $W/m06 contract
eb 06_L2 $W/m06 contract
eb 06_L4 $W/m06 contract VERBATIM_GEMM_V1_LOADS=4
wait_for $W/m8 30
VB=$MAIN eb 8_main $W/m8 contract
eb 8_L2 $W/m8 contract
eb 8_L4 $W/m8 contract VERBATIM_GEMM_V1_LOADS=4
call_finish
