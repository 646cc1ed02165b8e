#!/usr/bin/env bash
# Session 6, last call (one H200, ~110 s): the wgmma GEMM with one stage of MMAs left running while
# the next stage's are issued (VERBATIM_GEMM_WGMMA_LAG=1) against the default (lag 0): bits
# (cuda_ops_test lists both; gemm-bench's v1-bit column; the 0.6B bf16 digest of record) and speed
# (gemm-bench at 2,048 rows, engine-bench prefill on 0.6B and 8B, both ways).
# Result (bench/results/h200_s6_lag*): same bits; gate_up / lm_head +0.5%, the in-kernel-sum shapes
# 18-25% slower (ptxas serialized them, C7513), prefill 0.6B 28.5 vs 26.3 ms, 8B 195 vs 177: the
# lag was reverted; the binaries this script needs are those of e2d15ed.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-150}
call_setup s6_lag
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02 &
mk qwen3-8b $W/m8 0.02 &
run_test cuda_ops_test 100
timeout 100 "$VB" gemm-bench --archs qwen3-8b,qwen3-0.6b --m 2048 --kernels tiled:wgmma,tiled:wglag1 \
  --json $OUT/gemm_2048.json > $OUT/gemm_2048.log 2>&1
say "gemm-bench 2048 rc=$?"
grep -E "qkv|gate_up|down|lm_head| o |^sum" $OUT/gemm_2048.log | awk '{print $1,$2,$6,$7,$10,$11,$12,$13,$14,$15}' | tee -a $LOG
wait_for $W/m06 60
inv 06_bf16_lag1 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb VERBATIM_GEMM_WGMMA_LAG=1
EB_BATCHES=1 EB_STEPS=2 EB_MIN_LEFT=20 eb 06_lag0 $W/m06 contract VERBATIM_GEMM_WGMMA_LAG=0
EB_BATCHES=1 EB_STEPS=2 EB_MIN_LEFT=20 eb 06_lag1 $W/m06 contract VERBATIM_GEMM_WGMMA_LAG=1
wait_for $W/m8 40
EB_BATCHES=1 EB_STEPS=2 EB_MIN_LEFT=20 eb 8_lag0 $W/m8 contract VERBATIM_GEMM_WGMMA_LAG=0
EB_BATCHES=1 EB_STEPS=2 EB_MIN_LEFT=20 eb 8_lag1 $W/m8 contract VERBATIM_GEMM_WGMMA_LAG=1
call_finish
