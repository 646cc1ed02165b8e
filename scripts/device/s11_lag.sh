#!/usr/bin/env bash
# Session 11, call 3 (one H200, ~200 s): 256-row wgmma CTAs with TMA copies, one chunk a stage and
# one stage of MMAs left running (VERBATIM_GEMM_WGMMA_LAG256=1) against two chunks a stage that wait
# for their MMAs (the default after call 2), in one binary. Bits: cuda_ops_test (the new
# configuration against v1; the workspace test now asserts which launches wrote the workspace),
# the 0.6B bf16 digest with the knob on. Speed: gemm-bench at 2,048 rows (tiled, tiled:wglag),
# engine-bench 2,048-token prefill alternated (two rounds on 8B, one on 1.7B and 0.6B), ncu stall
# samples of the 256-row gate_up launch with the knob on.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s11_lag 230
mk qwen3-1.7b $W/m17 0.02 &
run_test cuda_ops_test 100
inv 06_bf16_lag $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb VERBATIM_GEMM_WGMMA_LAG256=1
gemm_2048 "" tiled,tiled:wglag
wait_for $W/m8 150
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30
L0=VERBATIM_GEMM_WGMMA_LAG256=0 L1=VERBATIM_GEMM_WGMMA_LAG256=1
ab_vars 8p $W/m8 2 lag0 $L0 lag1 $L1
ab_vars 06p $W/m06 1 lag0 $L0 lag1 $L1
wait_for $W/m17 30 && ab_vars 17p $W/m17 1 lag0 $L0 lag1 $L1
VERBATIM_GEMM_WGMMA_LAG256=1 ncu_prof wg_gateup_lag gemm_wgmma 2 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
call_finish
