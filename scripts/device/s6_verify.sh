#!/usr/bin/env bash
# Session 6, call 2 (one H200, BUDGET s, default 420): the wgmma GEMM after the A-register fix
# (session 6's first call found its direct stores wrong in 28% of elements: wgmma reads its A
# registers asynchronously and one register set per chunk was rewritten under it).
# Bits: cuda_ops_test, gemm-bench's v1-bit column at 2,048 rows, the invariance matrix with
# VERBATIM_GEMM_WGMMA=1 on the 0.6B digests of record and on the 8B folder (init std 0.005; bf16
# digest of record, fp16 against the mma.sync path's digest of the same run). Speed: engine-bench
# prefill on the three shapes with the knob on and off.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-420}
call_setup s6_verify
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
run_test cuda_ops_test 100
timeout 100 "$VB" gemm-bench --archs qwen3-8b,qwen3-0.6b --m 2048 \
  --kernels tiled:mma,tiled:wgnocombine,tiled:wgcombine,tiled:wgmma --json $OUT/gemm_2048.json > $OUT/gemm_2048.log 2>&1
say "gemm-bench 2048 rc=$?"
grep -E "qkv|gate_up|down|lm_head| o " $OUT/gemm_2048.log | awk '{print $1,$2,$6,$7,$10,$11,$12,$13,$14,$15}' | tee -a $LOG
inv 06_bf16_wg $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb VERBATIM_GEMM_WGMMA=1
inv 06_fp16_wg $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=9ca352b0e004b7b3 VERBATIM_GEMM_WGMMA=1
EB_BATCHES=1 EB_STEPS=4 eb 06_wg $W/m06 contract VERBATIM_GEMM_WGMMA=1
EB_BATCHES=1 EB_STEPS=4 eb 06_mma $W/m06 contract VERBATIM_GEMM_WGMMA=0
wait_for $W/m8r 150 && {
  inv 8r_bf16_wg $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf VERBATIM_GEMM_WGMMA=1
  inv 8r_fp16 $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8
  d=$(grep -oE 'digest [0-9a-f]{16}' $OUT/inv_8r_fp16.log | head -1 | cut -d' ' -f2)
  [ -n "$d" ] && inv 8r_fp16_wg $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=$d VERBATIM_GEMM_WGMMA=1
  EB_BATCHES=1 EB_STEPS=4 eb 8_wg $W/m8r contract VERBATIM_GEMM_WGMMA=1
  EB_BATCHES=1 EB_STEPS=4 eb 8_mma $W/m8r contract VERBATIM_GEMM_WGMMA=0
}
wait_for $W/m17 60 && {
  EB_BATCHES=1 EB_STEPS=4 eb 17_wg $W/m17 contract VERBATIM_GEMM_WGMMA=1
  EB_BATCHES=1 EB_STEPS=4 eb 17_mma $W/m17 contract VERBATIM_GEMM_WGMMA=0
}
call_finish
