#!/usr/bin/env bash
# Session 16, call 1 (one H200, BUDGET s, default 260): session 15's persistence patch with its
# loader moving by additions. Bits (cuda_ops_test), gemm-bench at 2,048 rows plain / pairs /
# pairs + persistence, the 8B prefill under the three (two rounds) and 0.6B; then the per-kernel
# durations of two decode steps at batch 1 (8B, 0.6B), to plan the decode work.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s16_a 260
run_test cuda_ops_test 60
gemm_2048 "" "tiled:wgplain,tiled:wgpair,tiled"
wait_for $W/m8 40
export EB_MIN_LEFT=8 EB_BATCHES=1 EB_STEPS=4
V=("plain VERBATIM_GEMM_WGMMA_PAIRS=0 VERBATIM_GEMM_WGMMA_PERSIST=0" "pair VERBATIM_GEMM_WGMMA_PERSIST=0" "both")
ab_many pre8 $W/m8 2 "${V[@]}"
ab_many pre06 $W/m06 1 "${V[@]}"
[ "$(left)" -gt 40 ] && ncu_steps 8_b1 $W/m8 1
[ "$(left)" -gt 25 ] && ncu_steps 06_b1 $W/m06 1
call_finish
