#!/usr/bin/env bash
# Session 9, final call (one H200, BUDGET s, default 470): the figures of record with this
# session's changes (the wgmma prefill GEMM: W through shared memory, 256-row tiles where segments
# are not added in the kernel, SiLU·mul in its epilogue on 8B gate_up). As s8_final, plus the
# per-kernel durations of one 8B prefill: the op tests, the 0.6B digests, engine-bench contract and fast for 0.6B
# / 1.7B / 8B, the 8B digests (bf16 and fp16, init std 0.005), the HF peer, the 64-user HTTP
# check, the model tests.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s9_final 470
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
if [ "$(left)" -gt 50 ]; then
  timeout $(( $(left) - 5 )) "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    "$VB" engine-bench --model $W/m8 --device cuda --batches 1 --context 64 --steps 1 --prefill 2048 \
    --no-context-prefill > $W/ncu_prefill.csv 2> $W/ncu_prefill.err
  say "ncu prefill rc=$?"
  python3 scripts/device/ncu_summary.py $W/ncu_prefill.csv $OUT/ncu_prefill_8.txt > /dev/null
  head -14 $OUT/ncu_prefill_8.txt | tee -a $LOG
fi
call_finish
