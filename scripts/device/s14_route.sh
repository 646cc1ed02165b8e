#!/usr/bin/env bash
# Session 14, call 5 (one H200, ~150 s). The branch's v1 is level with main at 8B batch 1 but
# 21-29% slower at 32-64 rows (call 4). Same bits, other kernels for those rows: the tiled kernel
# above 16 or 32 rows (VERBATIM_GEMM_TILED_MIN_M), v2's cp.async pipeline (VERBATIM_GEMM=v2), against
# the default and main (verbatim_main), 8B and 0.6B decode.
# Pack: as s14_final.sh.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s14_route 150
export EB_STEPS=16 EB_MIN_LEFT=15 EB_PREFILL=0
MAIN=$VB_BIN/verbatim_main
variants=("new" "t16 VERBATIM_GEMM_TILED_MIN_M=16" "t32 VERBATIM_GEMM_TILED_MIN_M=32" "v2 VERBATIM_GEMM=v2")
VB=$MAIN eb 06_main $W/m06 contract
for v in "${variants[@]}"; do w=($v); eb 06_${w[0]} $W/m06 contract "${w[@]:1}"; done
wait_for $W/m8 30
VB=$MAIN eb 8_main $W/m8 contract
for v in "${variants[@]}"; do w=($v); eb 8_${w[0]} $W/m8 contract "${w[@]:1}"; done
call_finish
