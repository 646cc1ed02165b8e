#!/usr/bin/env bash
# Session 11, call 1 (one H200, ~250 s): the prefill attention's fold kernel variants in one binary
# (VERBATIM_ATTN_FOLD_PV: 1 = session 10's, 16 columns and cp.async loads; 2 = bulk row copies with
# block ids read a tile ahead; 3 = bulk and 32 columns; 4 = cp.async and 32 columns). Bits:
# cuda_ops_test (every variant against the default), the 0.6B digests on the default and on 3.
# Speed: engine-bench 2,048-token prefill per variant, alternated, two rounds on 8B, one on 0.6B;
# ncu stall samples of the fold kernel under 3; the per-kernel durations of one 8B prefill under 3.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s11_attn 300
bits_06
inv 06_bf16_fold3 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb VERBATIM_ATTN_FOLD_PV=3
inv 06_fp16_fold3 $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=9ca352b0e004b7b3 VERBATIM_ATTN_FOLD_PV=3
wait_for $W/m8 150
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30
for r in 1 2; do
  for m in 1 2 3 4; do eb 8p_fold${m}_r$r $W/m8 contract VERBATIM_ATTN_FOLD_PV=$m; done
done
for m in 1 2 3 4; do eb 06p_fold$m $W/m06 contract VERBATIM_ATTN_FOLD_PV=$m; done
VERBATIM_ATTN_FOLD_PV=3 ncu_prof fold3 attention_fold 8 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
VERBATIM_ATTN_FOLD_PV=3 ncu_prefill $W/m8
call_finish
