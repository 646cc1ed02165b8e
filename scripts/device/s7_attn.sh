#!/usr/bin/env bash
# Session 7, call 2 (one H200, ~300 s): the decode attention tile kernel with V copied by bulk
# copies (2 per lane instead of 32 cp.async with a block lookup each) and block lookups by shifts.
# Bits: cuda_ops_test (tile kernel modes 1 and 2 against the fold, block sizes 16 / 7 / 1) and the
# 0.6B digests of record in both modes. Speed: engine-bench decode with session 6's binary
# (verbatim_s6, carried beside the new one) against the new one in modes 1 (K loaded before the
# MMAs) and 2 (K read as used), same call, and the tile kernel forced at batch 1 and 8
# (VERBATIM_ATTN_SMALL_WARPS=1); then ncu of the new kernel at batch 32 on 8B.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test, plus
# verbatim_s6 from session 6's bin.tar.xz.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-420}
call_setup s7_attn
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
run_test cuda_ops_test 120
inv_of_record $W/m06
inv 06_bf16_mode2 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb VERBATIM_ATTN_TILE_KERNEL=2
wait_for $W/m8 150
export EB_PREFILL=0 EB_STEPS=24
NEW=$VB
for round in 1 2; do
  VB=$VB_BIN/verbatim_s6 eb 8_s6_r$round $W/m8 contract
  VB=$NEW eb 8_m1_r$round $W/m8 contract VERBATIM_ATTN_TILE_KERNEL=1
  VB=$NEW eb 8_m2_r$round $W/m8 contract VERBATIM_ATTN_TILE_KERNEL=2
done
# Batch 1 and 8 take the four-warp per-part kernel (CTAs <= 2 per SM); the new tile kernel there:
EB_BATCHES=1,8 VB=$NEW eb 8_m1_w1 $W/m8 contract VERBATIM_ATTN_TILE_KERNEL=1 VERBATIM_ATTN_SMALL_WARPS=1
EB_BATCHES=1,8 VB=$NEW eb 06_m1_w1 $W/m06 contract VERBATIM_ATTN_TILE_KERNEL=1 VERBATIM_ATTN_SMALL_WARPS=1
VB=$VB_BIN/verbatim_s6 eb 06_s6 $W/m06 contract
VB=$NEW eb 06_m1 $W/m06 contract VERBATIM_ATTN_TILE_KERNEL=1
VB=$NEW eb 06_m2 $W/m06 contract VERBATIM_ATTN_TILE_KERNEL=2
VB=$NEW
ncu_prof attn_b32_m1 'attention_tile' 10 $W/m8 --batches 32 --context 1024 --steps 2 --prefill 0 --no-context-prefill
VERBATIM_ATTN_TILE_KERNEL=2 ncu_prof attn_b32_m2 'attention_tile' 10 $W/m8 --batches 32 --context 1024 --steps 2 --prefill 0 --no-context-prefill
call_finish
