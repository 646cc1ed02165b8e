#!/usr/bin/env bash
# Session 4, call 5 (one H200, ~200 s): qkv_post's wide stores (4 v values, 2 q/k values a store)
# against the build before (.carry/bin/verbatim_prev): op tests, invariance 0.6B bf16 / fp16
# against the digests of record, engine-bench decode of 0.6B and 8B, ABAB.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test, plus the
# previous verbatim copied in as verbatim_prev.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-300}
call_setup s4_ab
say "gpu: $(gpu_facts | tr '\n' ';')"
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
MK8=$!
run_test cuda_ops_test 100
inv_of_record $W/m06
NEW=$VB_BIN/verbatim PREV=$VB_BIN/verbatim_prev
wait $MK8
for rep in 1 2; do
  for m in 06 8; do
    VB=$PREV; EB_PREFILL=0 eb ${m}_prev_r$rep $W/m$m contract
    VB=$NEW; EB_PREFILL=0 eb ${m}_new_r$rep $W/m$m contract
  done
done
call_finish
