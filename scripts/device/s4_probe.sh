#!/usr/bin/env bash
# Session 4, call 1 (one H200, ~450 s): is main still right on the GPU (846f4f3, a refactor never
# run there, plus the v1 GEMM's L2 prefetch of its weights before the PDL wait), does the prefetch
# pay (engine-bench A/B on VERBATIM_GEMM_PREFETCH_MB), does wgmma give mma.sync's bits
# (bench/mma_probe.cu), where an 8B decode step goes (ncu per kernel; stall reasons of the glue).
# VERBATIM_GEMM_PREFETCH_MB was the knob of that call's prefetch build; main has no prefetch (it
# measured no gain), so on main the A/B below runs three identical configurations.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test mma_probe
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-480}
call_setup s4_probe
say "gpu: $(gpu_facts | tr '\n' ';')"
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
MK8=$!
timeout 20 "$VB_BIN/mma_probe" --json $OUT/mma_probe.json > $OUT/mma_probe.log 2>&1
say "mma_probe rc=$?"
grep -E "K=1024" $OUT/mma_probe.log | tee -a $LOG
inv_of_record $W/m06
# The prefetch A/B: decode only (prefill is not programmatic past 4 rows), twice in ABAB order.
for rep in 1 2; do
  for mb in 0 16 64; do EB_PREFILL=0 EB_BATCHES=1,8,32 eb 06_pf${mb}_r$rep $W/m06 contract VERBATIM_GEMM_PREFETCH_MB=$mb; done
done
wait $MK8
for rep in 1 2; do
  for mb in 0 16 64; do EB_PREFILL=0 EB_BATCHES=1,8,32 eb 8_pf${mb}_r$rep $W/m8 contract VERBATIM_GEMM_PREFETCH_MB=$mb; done
done
run_test cuda_ops_test
[ "$(left)" -gt 120 ] && ncu_steps 8_b1 $W/m8 1
if [ "$(left)" -gt 100 ]; then
  # Why the glue kernels take what they take at batch 1: the detailed sections of one launch each.
  timeout 80 "$NCU" --clock-control none --set detailed -k regex:'add_rmsnorm_from|merge_kernel|qkv_post|silu_mul' \
    --launch-skip 40 --launch-count 4 "$VB" engine-bench --model $W/m8 --device cuda --batches 1 --context 1024 \
    --steps 2 --prefill 0 --no-context-prefill > $OUT/ncu_glue_detail.txt 2> $W/ncu_glue.err
  say "ncu glue detail rc=$?"
fi
if [ "$(left)" -gt 100 ]; then
  # The batch-32 attention (about a third of the 8B step): the tile kernel's limits.
  timeout 80 "$NCU" --clock-control none --set detailed -k regex:'attention_tile' --launch-skip 10 --launch-count 1 \
    "$VB" engine-bench --model $W/m8 --device cuda --batches 32 --context 1024 --steps 2 --prefill 0 \
    --no-context-prefill > $OUT/ncu_attn_b32_detail.txt 2> $W/ncu_attn.err
  say "ncu attention b32 detail rc=$?"
fi
if [ "$(left)" -gt 90 ]; then
  timeout $(( $(left) - 20 )) "$VB_BIN/cuda_model_test" > $OUT/cuda_model_test.log 2>&1
  say "cuda_model_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda_model_test.log | tr '\n' ' ')"
  grep -E "FAILED|Failure" $OUT/cuda_model_test.log | head -10 | tee -a $LOG
fi
call_finish
