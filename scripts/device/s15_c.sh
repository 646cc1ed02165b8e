#!/usr/bin/env bash
# Session 15, call 3 (one H200, BUDGET s, default 400). The wgmma kernel with each stage's two
# chunks copied as one 64-k box in the 128-byte swizzle (VERBATIM_GEMM_WGMMA_PAIRS=1; call 2: one
# stage of MMAs left running alone gained 0.5%, its stalls moved to the data waits) and with one
# CTA per SM looping over tiles (VERBATIM_GEMM_WGMMA_PERSIST=1: the next tile's copies during the
# epilogue): bits (cuda_ops_test runs both against v1), gemm-bench at 2,048 rows, the 2,048-token
# prefill of 8B (two rounds), 1.7B and 0.6B under each variant, ncu, the digests under them.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s15_c 470
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
run_test cuda_ops_test 100
gemm_2048 "" "tiled:wglag0,tiled:wgpair,tiled:wgpairlag1,tiled:wgpersist,tiled:wgpairpersist,cublas"
wait_for $W/m8 150
export EB_MIN_LEFT=30 EB_BATCHES=1 EB_STEPS=4
P=VERBATIM_GEMM_WGMMA_PAIRS=1 Q=VERBATIM_GEMM_WGMMA_PERSIST=1
V=("base VERBATIM_GEMM_WGMMA_LAG=0" "pair $P" "persist $Q" "pairpersist $P $Q" "all $P $Q VERBATIM_GEMM_WGMMA_LAG=1")
ab_many pre8 $W/m8 2 "${V[@]}"
wait_for $W/m17 40 && ab_many pre17 $W/m17 1 "${V[@]}"
ab_many pre06 $W/m06 1 "${V[@]}"
pre="--batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill"
[ "$(left)" -gt 80 ] && ( export $P $Q; ncu_prof wg_gateup_pp gemm_wgmma_kernel 2 $W/m8 $pre )
[ "$(left)" -gt 50 ] && inv 06_bf16_pp $W/m06 bfloat16 $P $Q VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55
[ "$(left)" -gt 50 ] && wait_for $W/m8r 45 && inv 8r_bf16_pp $W/m8r bfloat16 $P $Q VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
call_finish
