#!/usr/bin/env bash
# Session 34, call d (one GPU, BUDGET s, default 200): main at 7cc2f31, whose tile_probs /
# tile_compute_tr refactor (prob_pair) came after calls b and c: cuda_ops_test and the 0.6B
# digests of record, then the 0.6B engine-bench. Pack: PACK_XZ=1 scripts/device/pack.sh build
#   verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start_06 s34_d 200
bits_06
grep -E "^\[exp candidate\]" $OUT/cuda_ops_test.log | tee -a $LOG
EB_MIN_LEFT=20 eb 06_contract $W/m06 contract
call_finish
