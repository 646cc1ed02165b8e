#!/usr/bin/env bash
# Session 4, call 7 (one H200, ~150 s): the tiled GEMM with stages of two 32-k chunks (one barrier
# per 64 k) against stages of one (VERBATIM_GEMM_TILED_GROUP=1): op tests (every tiled knob ==
# v1 bit for bit), invariance 0.6B bf16 / fp16 against the digests of record, gemm-bench of the
# 8B layers at 2,048 rows, engine-bench prefill (and batch-1 decode) of 0.6B and 8B, ABAB.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-240}
call_setup s4_group
say "gpu: $(gpu_facts | tr '\n' ';')"
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
MK8=$!
run_test cuda_ops_test 100
inv_of_record $W/m06
timeout 60 "$VB" gemm-bench --archs qwen3-8b --m 2048 --kernels tiled,tiled:g1,cublas --json $OUT/gemm_bench.json \
  > $OUT/gemm_bench.log 2>&1
say "gemm-bench rc=$?"
grep -E "qwen3-8b" $OUT/gemm_bench.log | head -24 | tee -a $LOG
wait $MK8
for rep in 1 2; do
  for m in 06 8; do
    EB_BATCHES=1 eb ${m}_g2_r$rep $W/m$m contract
    EB_BATCHES=1 eb ${m}_g1_r$rep $W/m$m contract VERBATIM_GEMM_TILED_GROUP=1
  done
done
call_finish
