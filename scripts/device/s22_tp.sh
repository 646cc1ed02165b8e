#!/usr/bin/env bash
# Session 22, TP call (nvidia-h200-x2, BUDGET s, default 300). Tensor parallelism on two GPUs with
# the session-21/22 kernels (stream GEMM on the shards, PDL to 64 rows, W preload), last run on GPUs
# in session 3: cuda_tp_test (TP=2 == TP=1 bits, batch invariance, the all-reduce control), the
# 0.6B invariance matrix at TP=2 against the TP=1 digest of record, 8B decode at TP=1 and TP=2
# (contract), and gemm-bench at 2,048 rows (the final call's run stopped at the gate_up_silu row).
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_tp_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s22_tp 300
timeout 150 "$VB_BIN/cuda_tp_test" > $OUT/cuda_tp_test.log 2>&1
say "cuda_tp_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda_tp_test.log | tr '\n' ' ')"
grep -E "^\[tp|Failure|differ|rror" $OUT/cuda_tp_test.log | head -20 | tee -a $LOG
inv 06_bf16_tp2 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_TEST_TP=2
gemm_2048 "" "tiled,cublas"
wait_for $W/m8 60
export EB_MIN_LEFT=20 EB_PREFILL=0
eb 8_tp1 $W/m8 contract
[ "$(left)" -gt 40 ] && { EB_PREFILL=2048 EB_ARGS="--tensor-parallel-size 2" eb 8_tp2 $W/m8 contract; } || true
call_finish
