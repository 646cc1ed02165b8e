#!/usr/bin/env bash
# Session 14, call 2 (one H200, ~260 s). Why is the natural-sets v1 slower in decode (8B batch 32:
# gate_up with SiLU 106 against 57 us, qkv 28 against 18; call 1)? ncu's full set of the 8B gate_up
# launch (the third GEMM of a step) at batch 32 and 1: main (verbatim_main) against the branch in
# load modes 0 (W 16 bytes traded, x 8-byte loads) and 2 (x 16 bytes traded too: main's loads).
# Pack: as s14_loads.sh.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s14_prof 260
wait_for $W/m8 150
MAIN=$VB_BIN/verbatim_main
args="--batches 32 --context 1024 --steps 2 --prefill 0 --no-context-prefill"
VB=$MAIN ncu_prof g32_main gemm_kernel 2 $W/m8 $args
VERBATIM_GEMM_V1_LOADS=2 ncu_prof g32_L2 gemm_kernel 2 $W/m8 $args
ncu_prof g32_L0 gemm_kernel 2 $W/m8 $args
args="--batches 1 --context 1024 --steps 2 --prefill 0 --no-context-prefill"
VB=$MAIN ncu_prof g1_main gemm_kernel 2 $W/m8 $args
VERBATIM_GEMM_V1_LOADS=2 ncu_prof g1_L2 gemm_kernel 2 $W/m8 $args
call_finish
