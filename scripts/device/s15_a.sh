#!/usr/bin/env bash
# Session 15, call 1 (one H200, BUDGET s, default 480). The natural-sets patch as it stands (x by
# 8-byte loads up to 16 rows, through shared memory at 17-64; never run in this combined form):
# bits first (cuda_ops_test, the 0.6B digests), then ncu's full set of the 8B prefill's wgmma
# launches (gate_up with SiLU, down) to find what holds them at ~570 TFLOP/s against cuBLAS's ~790,
# then main (verbatim_main) against the patch, alternated: 8B two rounds, 1.7B, 0.6B; the 8B
# digests of record as the budget allows.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test, plus verbatim_main.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s15_a 480
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
bits_06
wait_for $W/m8 150
pre="--batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill"
ncu_prof wg_gateup gemm_wgmma_kernel 2 $W/m8 $pre
ncu_prof wg_down gemm_wgmma_kernel 3 $W/m8 $pre
grep -iE "bank|wavefront|Shared" $OUT/wg_gateup_details.txt | head -12 | tee -a $LOG
export EB_MIN_LEFT=40 EB_STEPS=16
MAIN=$VB_BIN/verbatim_main
for r in 1 2; do
  VB=$MAIN eb 8_main_r$r $W/m8 contract
  eb 8_new_r$r $W/m8 contract
done
wait_for $W/m17 40 && { VB=$MAIN eb 17_main $W/m17 contract; eb 17_new $W/m17 contract; }
VB=$MAIN eb 06_main $W/m06 contract
eb 06_new $W/m06 contract
wait_for $W/m8r 60 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
call_finish
