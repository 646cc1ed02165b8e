#!/usr/bin/env bash
# Session 14, final call (one H200, BUDGET s, default 420). The natural-sets GEMMs (session 13's
# patch) with v1's trades chunk by chunk next to their MMAs, 8-row groups past M loading nothing,
# x by 16-byte loads traded (v1_loads 2, the default): bits (cuda_ops_test; the 0.6B and 8B
# matrices against the new digests of record, common.sh), decode and prefill against main
# (e7115a5's code, carried as verbatim_main) alternated, load mode 0 as a third arm, then the
# figures of record (contract and fast, 0.6B / 1.7B / 8B) and, as the budget allows, the HTTP
# check and the model tests.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test tests/cuda_model_test,
# plus verbatim_main.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s14_final 420
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
bits_06
wait_for $W/m8 120
export EB_MIN_LEFT=40 EB_STEPS=16
MAIN=$VB_BIN/verbatim_main
for r in 1 2; do
  VB=$MAIN eb 8_main_r$r $W/m8 contract
  eb 8_new_r$r $W/m8 contract
  EB_PREFILL=0 eb 8_L0_r$r $W/m8 contract VERBATIM_GEMM_V1_LOADS=0
done
VB=$MAIN eb 06_main $W/m06 contract
eb 06_new $W/m06 contract
EB_PREFILL=0 eb 06_L0 $W/m06 contract VERBATIM_GEMM_V1_LOADS=0
eb 06_fast $W/m06 fast
eb 8_fast $W/m8 fast
wait_for $W/m8r 60 && {
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
  inv 8r_fp16 $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=eba874a3a0dbd45c
}
wait_for $W/m17 40 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; VB=$MAIN eb 17_main $W/m17 contract; }
[ "$(left)" -gt 80 ] && http_check $W/m06
if [ "$(left)" -gt 60 ]; then
  run_test cuda_model_test $(( $(left) - 10 ))
  grep -E "\[cuda parity" $OUT/cuda_model_test.log | head -8 | tee -a $LOG
fi
call_finish
