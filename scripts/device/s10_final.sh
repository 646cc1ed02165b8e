#!/usr/bin/env bash
# Session 10, final call (one H200, BUDGET s, default 560): the figures of record with this
# session's prefill changes (the wgmma GEMM adding split-K segments on 256-row CTAs with its sums
# in the workspace where K >= 4,096, one stage of MMAs left running on 128-row CTAs; the fold
# attention's CTAs longest first), against session 9's binary (carried as verbatim_s9) in the same
# call. As s9_final, plus gemm-bench at 2,048 rows and the prefill A/B: the op tests, the 0.6B
# digests, engine-bench contract and fast for 0.6B / 1.7B / 8B, the 8B digests (bf16 and fp16, init
# std 0.005), the HF peer, the 64-user HTTP check, the model tests, the per-kernel durations of one
# 8B prefill.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test,
# plus session 9's verbatim (0d23069) as verbatim_s9.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s10_final 560
( mk qwen3-1.7b $W/m17 0.02; mk qwen3-8b $W/m8r 0.005 ) &
S9=$VB_BIN/verbatim_s9
bits_06
gemm_2048 "" tiled,tiled:wgsum128,tiled:wgsum256,cublas
wait_for $W/m8 200
EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30 ab_eb $S9 s9 8p $W/m8 2
EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30 ab_eb $S9 s9 06p $W/m06 1
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
eb 8_contract $W/m8 contract
eb 8_fast $W/m8 fast
wait_for $W/m17 200 && {
  EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30 ab_eb $S9 s9 17p $W/m17 1
  eb 17_contract $W/m17 contract
  eb 17_fast $W/m17 fast
}
record_checks
call_finish
