#!/usr/bin/env bash
# Session 8, final call (one H200, BUDGET s, default 470): the figures of record with this
# session's changes (SiLU·mul in the 8B gate_up GEMM's epilogue at <= 32 rows; v1's pre-wait L2
# prefetch of weights of <= 16 MiB; the fused merge exists but is off). As s7_final without the
# ncu profiles: the op tests, the 0.6B digests of record, engine-bench contract and fast for 0.6B
# / 1.7B / 8B, the 8B digests (bf16 and fp16, init std 0.005), the HF peer, the 64-user HTTP
# check, the model tests.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s8_final 470
( mk qwen3-1.7b $W/m17 0.02; mk qwen3-8b $W/m8r 0.005 ) &
bits_06
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
wait_for $W/m8 200
eb 8_contract $W/m8 contract
eb 8_fast $W/m8 fast
wait_for $W/m17 200 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
wait_for $W/m8r 100 && {
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
  inv 8r_fp16 $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=7e58f529cd75d598
}
[ "$(left)" -gt 120 ] && hf_peer 06 $W/m06 6 90
[ "$(left)" -gt 120 ] && hf_peer 8 $W/m8 4 100
[ "$(left)" -gt 80 ] && http_check $W/m06
if [ "$(left)" -gt 70 ]; then
  run_test cuda_model_test $(( $(left) - 10 ))
  grep -E "\[cuda parity" $OUT/cuda_model_test.log | head -8 | tee -a $LOG
fi
call_finish
