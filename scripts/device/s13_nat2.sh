#!/usr/bin/env bash
# Session 13, call 3 (one H200, ~200 s). Branch s13-natural-sets, second form: the wgmma kernel's
# chunks come by one tensor copy of x and one of W in the 64-byte swizzle (wgmma's K-major swizzled
# layout, no staging), v1 loads W 16 bytes a lane again and trades halves within the quad
# (steps_of_w). Bits: cuda_ops_test (wgmma, v2, tiled against v1); the 0.6B and 8B bf16 matrices against
# call 2's new digests (the steps' k sets are call 2's; only which slot takes which k moved, which
# mma_probe found changes nothing). Speed: gemm-bench at 2,048 rows; engine-bench decode 1/8/32/64
# and prefill, main (5e0166c, carried as verbatim_main) against the branch, alternated, two rounds on
# 8B, one on 0.6B; the branch's per-kernel durations of one 8B prefill.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test, plus verbatim_main.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s13_nat2 200
mk qwen3-8b $W/m8r 0.005 &
run_test cuda_ops_test 100
inv 06_bf16 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55
gemm_2048 "" tiled,cublas
wait_for $W/m8 120
export EB_STEPS=16 EB_MIN_LEFT=40
ab_eb $VB_BIN/verbatim_main main 8 $W/m8 2
ab_eb $VB_BIN/verbatim_main main 06 $W/m06 1
wait_for $W/m8r 90 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
ncu_prefill $W/m8
call_finish
