#!/usr/bin/env bash
# Session 10, call 2 (one H200, ~300 s): the wgmma prefill GEMM keeping one stage of MMAs in flight
# (wgmma.wait_group 1, two sets of A fragments, three staged W buffers, one chunk per stage, eight
# stages of copies ahead) against call 1's binary (carried as verbatim_prev: 256-row segment sums,
# wait_group 0 per stage). Bits: cuda_ops_test, the 0.6B digests of record, the 8B bf16 one.
# Speed: gemm-bench at 2,048 rows (both binaries; cuBLAS), engine-bench 2,048-token prefill
# alternated old / new, two rounds on 8B; the fold attention's CTAs longest first against plan order
# (VERBATIM_ATTN_LONGEST_FIRST=0). ncu full set of one 8B qkv launch.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test,
# plus call 1's verbatim as verbatim_prev.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s10_pipe 420
mk qwen3-8b $W/m8r 0.005 &
PREV=$VB_BIN/verbatim_prev
bits_06
gemm_2048 "" tiled,tiled:wgsum128,cublas
gemm_2048 _prev tiled "$PREV"
wait_for $W/m8 150
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30
ab_eb $PREV prev 8 $W/m8 2
ab_eb $PREV prev 06 $W/m06 1
# The fold attention's CTAs in plan order against longest first (the new binary's default).
for r in 1 2; do
  eb 8_planorder_r$r $W/m8 contract VERBATIM_ATTN_LONGEST_FIRST=0
  eb 8_longest_r$r $W/m8 contract
done
wait_for $W/m8r 60 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
ncu_prof wg_qkv 'gemm_wgmma' 8 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
call_finish
