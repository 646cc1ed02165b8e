#!/usr/bin/env bash
# Session 22, call 5 (one H200, BUDGET s, default 200; the x2 machine for s22_tp.sh was not lent).
# gemm-bench at 2,048 rows on the 8B and 0.6B layers (the final call's run stopped at the
# gate_up_silu row), and ncu's per-kernel durations of two decode steps at batch 1 on the 8B and
# the 0.6B with main's defaults (the stream GEMM's preload and register SiLU epilogue).
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s22_g 200
gemm_2048 "" "tiled,cublas"
ncu_steps 06_b1 $W/m06 1
wait_for $W/m8 60 && ncu_steps 8_b1 $W/m8 1
call_finish
