#!/usr/bin/env bash
# Session 2, after the staging fix (a step without logit rows returned before its upload from
# pinned staging had run; the next step rewrote the staging: chunked-prefill outputs changed and
# the 8B run read garbage slots): the chunked-prefill case twice, the whole GPU matrix
# (s2_matrix.sh, both GPUs, BUDGET s) with cuda_model_test beside it, then cuda_tp_test.
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0
FINAL=$OUT
R=/tmp/res && mkdir -p $R/matrix
source scripts/device/common.sh
( export OUT=$R/matrix BUDGET=${BUDGET:-190}; bash scripts/device/s2_matrix.sh ) > $R/matrix/stdout.log 2>&1 &
PM=$!
CUDA_VISIBLE_DEVICES=0 timeout 120 "$VB_BIN/cuda_model_test" > $R/cuda_model_test.log 2>&1
echo "cuda_model_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/cuda_model_test.log | tr '\n' ' ')"
wait $PM
NCCL_DEBUG=WARN timeout 60 "$VB_BIN/cuda_tp_test" > $R/cuda_tp_test.log 2>&1
echo "cuda_tp_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/cuda_tp_test.log | tr '\n' ' ')"
tar czf "$FINAL/s2_verify.tgz" -C $R .
cp $R/matrix/s2_matrix.log $R/matrix/s2_matrix.json "$FINAL/" 2>/dev/null
grep -A40 "== s2_matrix summary" $R/matrix/s2_matrix.log
echo "total $SECONDS s"
