#!/usr/bin/env bash
# Session 15, call 2 (one H200, BUDGET s, default 400). The 256-row wgmma kernel leaving one stage
# of MMAs running (VERBATIM_GEMM_WGMMA_LAG=1; call 1's ncu: 49% of the gate_up launch's stall
# samples wait for each stage's MMAs or the CTA barrier after them, tensor pipe 60%): bits
# (cuda_ops_test runs it against v1), gemm-bench at 2,048 rows (lag 0 / lag 1 / cuBLAS), then the
# 2,048-token prefill of 8B (two rounds), 1.7B and 0.6B under each, and ncu of the lag-1 gate_up.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s15_b 400
mk qwen3-1.7b $W/m17 0.02 &
run_test cuda_ops_test 100
gemm_2048 "" "tiled:wglag0,tiled:wglag1,cublas"
wait_for $W/m8 150
export EB_MIN_LEFT=30 EB_BATCHES=1 EB_STEPS=4
ab_many pre8 $W/m8 2 "lag0 VERBATIM_GEMM_WGMMA_LAG=0" "lag1 VERBATIM_GEMM_WGMMA_LAG=1"
wait_for $W/m17 40 && ab_many pre17 $W/m17 1 "lag0 VERBATIM_GEMM_WGMMA_LAG=0" "lag1 VERBATIM_GEMM_WGMMA_LAG=1"
ab_many pre06 $W/m06 1 "lag0 VERBATIM_GEMM_WGMMA_LAG=0" "lag1 VERBATIM_GEMM_WGMMA_LAG=1"
pre="--batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill"
[ "$(left)" -gt 60 ] && VERBATIM_GEMM_WGMMA_LAG=1 ncu_prof wg_gateup_lag1 gemm_wgmma_kernel 2 $W/m8 $pre
[ "$(left)" -gt 50 ] && inv 06_bf16_lag1 $W/m06 bfloat16 VERBATIM_GEMM_WGMMA_LAG=1 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55
call_finish
