#!/usr/bin/env bash
# Session 46, call a (one GPU; ran on an H100 at 22:25, after which the patch landed): the merge with each
# part's exps on its own lane, the sampler's stats kernel reading its chunk into registers once and
# the top-logprobs kernel as a cluster finding each chunk's top n (docs/patches/s46-batch1-glue.patch;
# all meant to keep every bit) against main
# without them (verbatim_base, carried beside): the attention and sampler op tests, the 0.6B digests
# of record and the 8B bf16 digest with it, engine-bench base vs merge alternated on the 0.6B, 8B and
# 1.7B at 1 and 4 sequences (the merge runs at 1-7; the ring kernel from 8), the 0.6B at 1 and 8
# with an eval's logprobs (--logprobs 5 and 20: the top-logprobs kernel), and timelines. A third
# variant, "fused": the patched fold inside the attention kernel's last CTA
# (VERBATIM_ATTN_FUSED_MERGE=1, off on main since session 8 because main's serial fold made that
# CTA a long tail; with the fold ~4x shorter the saved launch may now win), with its 0.6B bf16
# digest. On an H200, the owed record (record_speed's rows) too.
# Build: main's build (ea2a560 or later: engine-bench --logprobs) copied as the base
# (cp build/verbatim /tmp/base46/verbatim), then
# `git apply docs/patches/s46-batch1-glue.patch`, rebuild verbatim + the three CUDA tests, and
# PACK_XZ=1 scripts/device/pack.sh build verbatim /tmp/base46/verbatim=verbatim_base \
#   tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test   (27 MB packed).
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s46_a 560
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
ops_attention
timeout 60 "$VB_BIN/cuda_ops_test" --gtest_filter='CudaSampler*' > $OUT/ops_sampler.log 2>&1
say "sampler op tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/ops_sampler.log | tr '\n' ' ')"
inv_of_record $W/m06
inv 06_bf16_fused $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_ATTN_FUSED_MERGE=1
AB=("base=$VB_BIN/verbatim_base" "lanes=$VB" "fused=$VB VERBATIM_ATTN_FUSED_MERGE=1")
EB_PREFILL=0 EB_MIN_LEFT=60 EB_BATCHES=1,4 ab_bins ab06 $W/m06 3 "${AB[@]}"
wait_for $W/m8 150 && EB_PREFILL=0 EB_MIN_LEFT=60 EB_BATCHES=1,4 ab_bins ab8 $W/m8 2 "${AB[@]}"
wait_for $W/m8r 90 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
trace_decode 8_b1 $W/m8 1
trace_decode 06_b1 $W/m06 1
VB=$VB_BIN/verbatim_base trace_decode 06_b1_base $W/m06 1
EB_PREFILL=0 EB_MIN_LEFT=60 EB_BATCHES=1,8 EB_ARGS="--logprobs 5" ab_eb $VB_BIN/verbatim_base base lp5_06 $W/m06 2
EB_PREFILL=0 EB_MIN_LEFT=60 EB_BATCHES=1,8 EB_ARGS="--logprobs 20" ab_eb $VB_BIN/verbatim_base base lp20_06 $W/m06 2
wait_for $W/m17 40 && EB_PREFILL=0 EB_MIN_LEFT=60 EB_BATCHES=1,4 ab_bins ab17 $W/m17 2 "${AB[@]:0:2}"
if is_h200; then
  EB_MIN_LEFT=30 EB_PREFILL=0 record_speed
fi
call_finish
