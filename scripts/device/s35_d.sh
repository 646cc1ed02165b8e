#!/usr/bin/env bash
# Session 35, call d (one GPU, BUDGET s, default 240): batch-1 attention, the existing same-bits
# switches against main's default in one call (s35_b's timeline: at batch 1 the per-part kernel +
# merge take ~8.5 us of a 0.6B layer's ~38): the fused merge (VERBATIM_ATTN_FUSED_MERGE=1, slower
# in session 8 on the H200), the ring kernel from one sequence (VERBATIM_ATTN_RING_MIN_BATCH=1), the
# fold kernel for decode (VERBATIM_DECODE_FOLD_MIN_BATCH=1); 0.6B and 8B at 1 / 8, 3 rounds
# alternated; CUPTI timelines of the fused merge. Pack: PACK_XZ=1 scripts/device/pack.sh build verbatim
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-240}
call_setup s35_d
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
export EB_MIN_LEFT=20 EB_PREFILL=0 EB_BATCHES=1,8
ab_many b06 $W/m06 3 "main" "fused VERBATIM_ATTN_FUSED_MERGE=1" "ring VERBATIM_ATTN_RING_MIN_BATCH=1" \
  "fold VERBATIM_DECODE_FOLD_MIN_BATCH=1"
wait_for $W/m8 60
ab_many b8 $W/m8 3 "main" "fused VERBATIM_ATTN_FUSED_MERGE=1" "ring VERBATIM_ATTN_RING_MIN_BATCH=1" \
  "fold VERBATIM_DECODE_FOLD_MIN_BATCH=1"
trace_decode 06_b1_fused $W/m06 1 VERBATIM_ATTN_FUSED_MERGE=1
trace_decode 06_b1 $W/m06 1
call_finish
