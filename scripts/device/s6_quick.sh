#!/usr/bin/env bash
# Session 6, quick check (one H200, ~90 s): the wgmma GEMM with coalesced W loads: its bits
# (cuda_ops_test, gemm-bench's v1-bit column, the 0.6B bf16 digest of record) and its speed at 2,048 rows.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-150}
call_setup s6_quick
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02 &
VERBATIM_GEMM_WGMMA=1 run_test cuda_ops_test 100
timeout 100 "$VB" gemm-bench --archs qwen3-8b,qwen3-0.6b --m 2048 --kernels tiled:mma,tiled:wgnocombine,tiled:wgmma \
  --json $OUT/gemm_2048.json > $OUT/gemm_2048.log 2>&1
say "gemm-bench 2048 rc=$?"
grep -E "qkv|gate_up|down|lm_head| o |^sum" $OUT/gemm_2048.log | awk '{print $1,$2,$6,$7,$10,$11,$12,$13,$14,$15}' | tee -a $LOG
wait
inv 06_bf16_wg $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb VERBATIM_GEMM_WGMMA=1
EB_BATCHES=1 EB_STEPS=4 eb 06_wg $W/m06 contract VERBATIM_GEMM_WGMMA=1
call_finish
