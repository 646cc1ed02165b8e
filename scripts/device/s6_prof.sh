#!/usr/bin/env bash
# Session 6, call 3 (one H200, ~150 s): what holds the wgmma prefill GEMM back (8B, 2,048 rows,
# VERBATIM_GEMM_WGMMA=1): ncu full set of one gate_up launch (grid 16 x 192) and one qkv launch:
# details and the stall summary per SASS instruction (sass_top.py).
# Pack: pack.sh build-cuda verbatim
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-200}
call_setup s6_prof
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-8b $W/m8 0.02
# Launches per layer in a prefill: qkv, o, gate_up, down (the wgmma kernel); layer 2's gate_up is launch 10.
VERBATIM_GEMM_WGMMA=1 ncu_prof wg_gate_up 'gemm_wgmma' 10 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
call_finish
