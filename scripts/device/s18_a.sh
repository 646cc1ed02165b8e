#!/usr/bin/env bash
# Session 18, call 1 (one H200, BUDGET s, default 330). Three changes of how work is loaded or
# launched, none of the arithmetic:
#  (1) qkv_post for >= 65 tokens (prefill): warps looping over the items on 8 blocks of 8 warps
#      per SM instead of ~49,000 two-warp blocks (on by default; VERBATIM_QKV_POST_LOOP=0: old);
#  (2) the prefill fold kernel's K / V rows by 16-byte cp.async instead of one bulk copy per row
#      (VERBATIM_ATTN_FOLD_PV=4; default 3);
#  (3) the decode tile kernel's V rows the same way (VERBATIM_ATTN_TILE_KERNEL=3; default 1).
# Bits: cuda_ops_test (each against the others), the 0.6B digests of record with (2) and (3) on,
# the 8B digests (bf16 with (2) and (3) on; fp16 with the defaults: session 17's GEMM defaults
# never ran them). Speed: 8B prefill 2,048 and decode at 32 / 64 under each, alternated twice.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s18_a 330
mk qwen3-8b $W/m8r 0.005 &
run_test cuda_ops_test 100
NEW="VERBATIM_ATTN_FOLD_PV=4 VERBATIM_ATTN_TILE_KERNEL=3"
inv 06_bf16_new $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 $NEW
inv 06_fp16_new $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=d4981a65b9914c52 $NEW
wait_for $W/m8 150
export EB_MIN_LEFT=60 EB_BATCHES=32,64 EB_STEPS=16
V=("base VERBATIM_QKV_POST_LOOP=0" "loop" "fold4 VERBATIM_ATTN_FOLD_PV=4" "tile3 VERBATIM_ATTN_TILE_KERNEL=3")
ab_many p8 $W/m8 2 "${V[@]}"
ab_many p06 $W/m06 1 "${V[@]}"
wait_for $W/m8r 40 && {
  inv 8r_bf16_new $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2 $NEW
  [ "$(left)" -gt 100 ] && inv 8r_fp16 $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=eba874a3a0dbd45c
}
call_finish
