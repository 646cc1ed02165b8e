#!/usr/bin/env bash
# Session 15, last call (one H200, BUDGET s, default 150). The final call's binary ran the plain
# wgmma kernel (one chunk a box, one CTA a tile) ~20% slower than call 2's binary: its TMA loader
# recomputed the tile and chunk by divisions on thread 0's path; now it moves by additions. Bits
# (cuda_ops_test), gemm-bench at 2,048 rows, the 8B prefill plain / defaults (two rounds) and 0.6B.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s15_fix 150
run_test cuda_ops_test 60
gemm_2048 "" "tiled:wgplain,tiled:wgpair,tiled"
wait_for $W/m8 40
export EB_MIN_LEFT=8 EB_BATCHES=1 EB_STEPS=4
V=("plain VERBATIM_GEMM_WGMMA_PAIRS=0 VERBATIM_GEMM_WGMMA_PERSIST=0" "pair VERBATIM_GEMM_WGMMA_PERSIST=0" "both")
ab_many pre8 $W/m8 2 "${V[@]}"
ab_many pre06 $W/m06 1 "${V[@]}"
call_finish
