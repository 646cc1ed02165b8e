#!/usr/bin/env bash
# Session 17, call 1 (one H200, BUDGET s, default 420). Three changes, each separable by a switch:
# (1) the decode tile attention kernel can keep its warps resident over several items
# (VERBATIM_ATTN_TILE_LOOP = resident CTAs per SM to aim for; 0 = one CTA per item, the default
# in this binary), prefetching its next item's K (PREFETCH=1) or K and V (2) into L2;
# (2) session 16's sampler patch (block sum / max / min through one block_reduce template);
# (3) the v1 decode GEMM prefetching the W lines of the round N rounds ahead into L2 as each round
# starts (VERBATIM_GEMM_V1_AHEAD=N; 0, the default, none).
# Bits: cuda_ops_test (the sampler against the CPU; the tile kernel looping over 3 columns against
# one CTA per item), the 0.6B digests of record with the loop off and on, the 64-user HTTP check
# (greedy and seeded: the sampler). Speed: 8B and 0.6B decode at 8 / 32 / 64 rows, loop variants
# alternated; at batch 1 the one-warp tile kernel against the four-warp
# per-part kernel; then ncu of the 8B batch-32 step with the best guess.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s17_a 420
bits_06
inv 06_bf16_l12 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_ATTN_TILE_LOOP=12
inv 06_fp16_l2a2 $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=d4981a65b9914c52 VERBATIM_ATTN_TILE_LOOP=2 VERBATIM_GEMM_V1_AHEAD=2
wait_for $W/m8 100
export EB_MIN_LEFT=40 EB_PREFILL=0 EB_BATCHES=8,32,64
V=("off" "l12 VERBATIM_ATTN_TILE_LOOP=12" "l8 VERBATIM_ATTN_TILE_LOOP=8" "l4 VERBATIM_ATTN_TILE_LOOP=4"
   "l12p0 VERBATIM_ATTN_TILE_LOOP=12 VERBATIM_ATTN_TILE_PREFETCH=0" "l12p1 VERBATIM_ATTN_TILE_LOOP=12 VERBATIM_ATTN_TILE_PREFETCH=1")
ab_many tl8 $W/m8 2 "${V[@]}"
ab_many tl06 $W/m06 1 "${V[@]:0:4}"
G=("off" "a1 VERBATIM_GEMM_V1_AHEAD=1" "a2 VERBATIM_GEMM_V1_AHEAD=2" "a4 VERBATIM_GEMM_V1_AHEAD=4")
EB_BATCHES=1,8,32,64 ab_many ga8 $W/m8 2 "${G[@]}"
EB_BATCHES=1,8,32,64 ab_many ga06 $W/m06 1 "${G[@]}"
# Batch 1: the four-warp per-part kernel (default at <= 2 CTAs per SM) against the one-warp tile kernel.
EB_BATCHES=1 ab_many w8 $W/m8 2 "auto" "w1 VERBATIM_ATTN_SMALL_WARPS=1"
EB_BATCHES=1 ab_many w06 $W/m06 1 "auto" "w1 VERBATIM_ATTN_SMALL_WARPS=1"
[ "$(left)" -gt 80 ] && http_check $W/m06
[ "$(left)" -gt 50 ] && VERBATIM_ATTN_TILE_LOOP=12 ncu_steps 8_b32_l12 $W/m8 32
call_finish
