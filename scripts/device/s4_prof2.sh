#!/usr/bin/env bash
# Session 4, call 6 (one H200, ~150 s): the two kernels that hold the 8B prefill back, for the next
# session's work on them: the tiled GEMM (128 x 128, 2,048 rows; 77% of a prefill with the other
# GEMMs) and the fold attention kernel (693 us a layer). ncu full set of one launch each: the
# details page and the stall summary per SASS instruction (sass_top.py).
# Pack: pack.sh build-cuda verbatim
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-200}
call_setup s4_prof2
say "gpu: $(gpu_facts | tr '\n' ';')"
mk qwen3-8b $W/m8 0.02
ncu_prof fold_prefill 'attention_fold' 20 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
ncu_prof tiled_prefill 'gemm_tiled_kernel' 30 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
call_finish
