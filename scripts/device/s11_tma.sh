#!/usr/bin/env bash
# Session 11, call 2 (one H200, ~330 s): the wgmma prefill GEMM's copies of x and W by tensor maps
# (TMA, one copy per chunk from one thread, GemmTuning::wgmma_tma) against 16-byte cp.async by every
# thread (VERBATIM_GEMM_WGMMA_TMA=0), in one binary; the fold attention's bulk loads are now the
# default (call 1). Bits: cuda_ops_test (every wgmma configuration on both copy paths against v1),
# the 0.6B digests, the 8B bf16 digest. Speed: gemm-bench at 2,048 rows (tiled, tiled:wgcp,
# cuBLAS), engine-bench 2,048-token prefill alternated TMA / cp.async (two rounds on 8B, one on
# 1.7B and 0.6B), ncu stall samples of the 256-row gate_up launch, per-kernel durations of one 8B
# prefill. Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s11_tma 330
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
bits_06
gemm_2048 "" tiled,tiled:wgcp,cublas
wait_for $W/m8 150
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30
ab_vars 8p $W/m8 2 cp VERBATIM_GEMM_WGMMA_TMA=0 tma VERBATIM_GEMM_WGMMA_TMA=1
ab_vars 06p $W/m06 1 cp VERBATIM_GEMM_WGMMA_TMA=0 tma VERBATIM_GEMM_WGMMA_TMA=1
wait_for $W/m8r 100 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
wait_for $W/m17 30 && ab_vars 17p $W/m17 1 cp VERBATIM_GEMM_WGMMA_TMA=0 tma VERBATIM_GEMM_WGMMA_TMA=1
ncu_prof wg_gateup gemm_wgmma 2 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
ncu_prefill $W/m8
call_finish
