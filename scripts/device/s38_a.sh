#!/usr/bin/env bash
# Session 38, call a (one GPU), adaptive: the s37-tidy build (score_block / fresh_tile_state shared
# by the tile and split kernels; same arithmetic) as $VB, main's (1b4a511) as verbatim_main.
# First the attention op tests on the tidy build. On an H200 (BUDGET 575): tidy against main at 1 / 2
# sequences on the 0.6B (2 rounds alternated), then record_suite on the tidy build (its digests of
# record prove the bits; its rows are the H200 figures of the split kernel). Elsewhere (BUDGET 300):
# the 0.6B digests, tidy against main at 1 / 2 / 4 sequences on the 0.6B and the 8B (3 rounds), the
# 8B bf16 digest, the model tests. Pack: the tidy build's verbatim + three CUDA tests, and
# /tmp/mainbin/verbatim=verbatim_main.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
MAIN=$VB_BIN/verbatim_main
if is_h200; then
  call_start s38_a 575
  ops_attention
  export EB_MIN_LEFT=20
  EB_PREFILL=0 EB_BATCHES=1,2 ab_bins tidy_06 $W/m06 2 "main=$MAIN" "tidy=$VB"
  record_suite
  attention_regs
else
  call_start s38_a 300
  ( mk qwen3-8b $W/m8r 0.005 ) &
  ops_attention
  inv_of_record $W/m06
  export EB_MIN_LEFT=20
  EB_PREFILL=0 EB_BATCHES=1,2,4 ab_bins tidy_06 $W/m06 3 "main=$MAIN" "tidy=$VB"
  wait_for $W/m8 60
  EB_PREFILL=0 EB_BATCHES=1,2,4 ab_bins tidy_8 $W/m8 3 "main=$MAIN" "tidy=$VB"
  wait_for $W/m8r 40 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
  attention_regs
  model_parity 60
fi
call_finish
