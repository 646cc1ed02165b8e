#!/usr/bin/env bash
# Session 4, call 5 (one H200, ~200 s): qkv_post's wide stores (4 v values, 2 q/k values a store)
# against the build before (.carry/bin/verbatim_prev): op tests, invariance 0.6B bf16 / fp16
# against the digests of record, engine-bench decode of 0.6B and 8B, ABAB.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test, plus the
# previous verbatim copied in as verbatim_prev.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-300}
call_setup s4_ab
say "gpu: $(gpu_facts | tr '\n' ';')"
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
MK8=$!
timeout 100 "$VB_BIN/cuda_ops_test" > $OUT/cuda_ops_test.log 2>&1
say "cuda_ops_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda_ops_test.log | tr '\n' ' ')"
grep -E "FAILED|Failure|differs" $OUT/cuda_ops_test.log | head -10 | tee -a $LOG
for dt in bfloat16 float16; do
  want=$([ $dt = float16 ] && echo 9ca352b0e004b7b3 || echo 02fdf9975bf8eafb)
  VERBATIM_TEST_EXPECT_DIGEST=$want VERBATIM_TEST_MODEL_DIR=$W/m06 VERBATIM_TEST_DTYPE=$dt timeout 120 \
    "$VB_BIN/cuda_invariance_test" --gtest_filter="$([ $dt = float16 ] && echo F16 || echo BF16)/*" > $OUT/inv_06_$dt.log 2>&1
  say "invariance 0.6B $dt rc=$? $(grep -E '^\[  (PASSED|FAILED) |digest|record' $OUT/inv_06_$dt.log | tr '\n' ' ')"
done
NEW=$VB_BIN/verbatim PREV=$VB_BIN/verbatim_prev
wait $MK8
for rep in 1 2; do
  for m in 06 8; do
    VB=$PREV; EB_PREFILL=0 eb ${m}_prev_r$rep $W/m$m contract
    VB=$NEW; EB_PREFILL=0 eb ${m}_new_r$rep $W/m$m contract
  done
done
call_finish
