#!/usr/bin/env bash
# Session 23, call 8 (one H200, BUDGET s, default 150): per-kernel durations (ncu, serialized) of
# one 8B decode step at 16, 32 and 64 sequences on main's code (753200a: the ring attention kernel,
# 4 x 5 at 16 sequences, 2 x 2 at 2 CTAs per SM at 32 and 64), for the record of what a layer costs.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s23_g 150
wait_for $W/m8 100
ncu_steps 8_b16 $W/m8 16
ncu_steps 8_b32 $W/m8 32
[ "$(left)" -gt 40 ] && ncu_steps 8_b64 $W/m8 64
call_finish
