#!/usr/bin/env bash
# Session 16, call 1 (one H200, BUDGET s, default 300): session 15's persistence patch with its
# loader moving by additions, and the cluster decode attention (VERBATIM_ATTN_CLUSTER=1, off by
# default). Bits (cuda_ops_test; the 0.6B digests of record with the cluster kernel on), gemm-bench
# at 2,048 rows plain / pairs / pairs + persistence, the 8B prefill under the three (two rounds) and
# 0.6B; decode with the cluster kernel off / on (8B two rounds, 0.6B one); then the per-kernel
# durations of two decode steps at batch 1 (8B, 0.6B).
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s16_a 300
run_test cuda_ops_test 60
[ -x $VB_BIN/cuda_invariance_test ] && inv 06_bf16_cl $W/m06 bfloat16 VERBATIM_ATTN_CLUSTER=1 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55
gemm_2048 "" "tiled:wgplain,tiled:wgpair,tiled"
wait_for $W/m8 40
export EB_MIN_LEFT=8
V=("plain VERBATIM_GEMM_WGMMA_PAIRS=0 VERBATIM_GEMM_WGMMA_PERSIST=0" "pair VERBATIM_GEMM_WGMMA_PERSIST=0" "both")
EB_BATCHES=1 EB_STEPS=4 ab_many pre8 $W/m8 2 "${V[@]}"
EB_BATCHES=1 EB_STEPS=4 ab_many pre06 $W/m06 1 "${V[@]}"
C=("cl0 VERBATIM_ATTN_CLUSTER=0" "cl1 VERBATIM_ATTN_CLUSTER=1")
EB_PREFILL=0 EB_STEPS=16 ab_many dec8 $W/m8 2 "${C[@]}"
EB_PREFILL=0 EB_STEPS=16 ab_many dec06 $W/m06 1 "${C[@]}"
[ "$(left)" -gt 40 ] && ncu_steps 8_b1 $W/m8 1
[ "$(left)" -gt 25 ] && ( export VERBATIM_ATTN_CLUSTER=1; ncu_steps 8_b1_cl $W/m8 1 )
[ "$(left)" -gt 15 ] && ncu_steps 06_b1 $W/m06 1
call_finish
