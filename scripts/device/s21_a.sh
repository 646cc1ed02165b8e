#!/usr/bin/env bash
# Session 21, call 1 (one H200, BUDGET s, default 420). The v1 decode GEMM with W's first load
# rounds read into registers before its PDL wait (VERBATIM_GEMM_V1_PRELOAD 0 / 1 / 2; weights are
# load-time data), and a second build with every kernel's PDL trigger before its wait
# (verbatim_tf: -DVERBATIM_PDL_TRIGGER_FIRST=1, so a GEMM's CTAs may be resident two kernels early).
# Bits: cuda_ops_test (v1 with 1 and 2 rounds preloaded against plain v1), the 0.6B digests of
# record with preload 2 and with the tf build. Speed: engine-bench contract at batch 1 and 4 (PDL
# covers <= 4 rows), every variant alternated 3 rounds, 0.6B then 8B; then batch 8 with PDL at 8 rows.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
#       build-cuda-tf/verbatim=verbatim_tf build-cuda-tf/tests/cuda_invariance_test=cuda_invariance_test_tf
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s21_a 420
run_test cuda_ops_test 100
inv 06_bf16_pre2 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_GEMM_V1_PRELOAD=2
inv 06_fp16_pre1 $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=d4981a65b9914c52 VERBATIM_GEMM_V1_PRELOAD=1
export EB_MIN_LEFT=40 EB_STEPS=32 EB_BATCHES=1,4 EB_PREFILL=0
TF=$VB_BIN/verbatim_tf
eb_tf() { VB=$TF eb "$@"; }
for r in 1 2 3; do
  eb 06_p0_r$r $W/m06 contract VERBATIM_GEMM_V1_PRELOAD=0
  eb 06_p1_r$r $W/m06 contract VERBATIM_GEMM_V1_PRELOAD=1
  eb 06_p2_r$r $W/m06 contract VERBATIM_GEMM_V1_PRELOAD=2
  eb_tf 06_tf0_r$r $W/m06 contract VERBATIM_GEMM_V1_PRELOAD=0
  eb_tf 06_tf2_r$r $W/m06 contract VERBATIM_GEMM_V1_PRELOAD=2
done
wait_for $W/m8 100
for r in 1 2 3; do
  eb 8_p0_r$r $W/m8 contract VERBATIM_GEMM_V1_PRELOAD=0
  eb 8_p1_r$r $W/m8 contract VERBATIM_GEMM_V1_PRELOAD=1
  eb 8_p2_r$r $W/m8 contract VERBATIM_GEMM_V1_PRELOAD=2
  eb_tf 8_tf0_r$r $W/m8 contract VERBATIM_GEMM_V1_PRELOAD=0
  eb_tf 8_tf2_r$r $W/m8 contract VERBATIM_GEMM_V1_PRELOAD=2
done
# Batch 8 (PDL off by default past 4 rows: VERBATIM_PDL_MAX_ROWS; session 7 found it 5% faster
# on 0.6B and 3% slower on 8B at 8 rows) with the preload, which only pays under PDL.
export EB_BATCHES=8
for r in 1 2 3; do
  for m in 06 8; do
    eb ${m}_b8_p0_r$r $W/m$m contract VERBATIM_GEMM_V1_PRELOAD=0
    eb ${m}_b8_p2pdl_r$r $W/m$m contract VERBATIM_GEMM_V1_PRELOAD=2 VERBATIM_PDL_MAX_ROWS=8
    eb_tf ${m}_b8_tf2pdl_r$r $W/m$m contract VERBATIM_GEMM_V1_PRELOAD=2 VERBATIM_PDL_MAX_ROWS=8
  done
done
# The tf build's own invariance test (the digests of record with the trigger first).
mkdir -p $W/tfbin && ln -sf $VB_BIN/cuda_invariance_test_tf $W/tfbin/cuda_invariance_test
[ "$(left)" -gt 60 ] && VB_BIN=$W/tfbin inv 06_bf16_tf $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_GEMM_V1_PRELOAD=2
call_finish
