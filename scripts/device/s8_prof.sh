#!/usr/bin/env bash
# Session 8, call 3 (one H200, ~150 s): why the fused merge is slower (s8_merge: the 8B batch-1
# attention kernel 9.5 -> 24.6 us, batch 32 +22 us a layer). ncu stall samples per SASS
# instruction of the fused per-part kernel (batch 1) and tile kernel (batch 32); per-kernel times
# of an 8B batch-1 step with the merge kernel (VERBATIM_ATTN_FUSED_MERGE=0) from the same binary.
# Pack: pack.sh build-cuda verbatim
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-200}
call_setup s8_prof
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-8b $W/m8 0.02
ncu_prof part_b1 'attention_part' 10 $W/m8 --batches 1 --context 1024 --steps 2 --prefill 0 --no-context-prefill
ncu_prof tile_b32 'attention_tile' 10 $W/m8 --batches 32 --context 1024 --steps 2 --prefill 0 --no-context-prefill
VERBATIM_ATTN_FUSED_MERGE=0 ncu_steps 8_b1_kernel $W/m8 1
call_finish
