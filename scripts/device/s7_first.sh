#!/usr/bin/env bash
# Written in session 6 for the next session's first call (one H200, ~180 s): where the two kernels
# that hold the biggest gaps now spend their time, before changing either.
# - The coalesced wgmma prefill GEMM (default since session 6; ~210 TFLOP/s against cuBLAS's ~800 on
#   the same shapes): ncu full set of one 8B gate_up launch, stall samples per SASS instruction.
# - attention_tile_kernel at batch 32 on 8B (71 us a layer, 2.6 ms of the 8.5 ms step): the same.
# Pack: pack.sh build-cuda verbatim
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-240}
call_setup s7_first
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-8b $W/m8 0.02
# Prefill launches per layer: qkv, o, gate_up, down; launch 10 is layer 2's gate_up.
ncu_prof wg_gate_up 'gemm_wgmma' 10 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
ncu_prof attn_b32 'attention_tile' 10 $W/m8 --batches 32 --context 1024 --steps 2 --prefill 0 --no-context-prefill
call_finish
